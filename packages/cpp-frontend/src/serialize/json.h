// Private: JSON read with a cursor (no document tree: the safetensors reader asks for the
// fields it expects and skips the others, so a header never costs much more memory than its
// own bytes; jit/json.h builds its tree for .ember programs on the same cursor) and written
// as serde_json writes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::serialize::detail {

// A position in a JSON text (RFC 8259, as strict as serde_json: no trailing commas, no
// leading zeros, no raw control characters in strings, paired \u surrogates). Errors are
// ember::Error "<where>: invalid JSON in <subject> at byte N: <what>".
class JsonCursor {
public:
    // Nesting deeper than this raises (serde_json's recursion limit).
    static constexpr int kMaxDepth = 128;

    JsonCursor(std::string_view text, std::string where,
               std::string subject = "the safetensors header")
        : text_(text), where_(std::move(where)), subject_(std::move(subject)) {}

    void skip_whitespace() noexcept;
    // After whitespace: the next character, or '\0' at the end.
    char peek();
    // Consumes `c` (after whitespace) or raises, saying `what` was expected.
    void expect(char c, const char* what);
    // Consumes `c` (after whitespace) when it is next.
    bool consume(char c);
    bool at_end();

    // A string (after whitespace), escapes decoded to UTF-8.
    std::string read_string();
    // A non-negative integer literal that fits in 64 bits (a fraction, an exponent or a
    // sign raises, as serde refuses them for usize).
    uint64_t read_u64(const char* what);
    // Whether the next value is the literal null (consumed if so).
    bool consume_null();
    // Consumes `word` (true, false, null) or raises "invalid literal".
    void read_literal(std::string_view word) { skip_literal(word); }
    // A number literal (after whitespace), its syntax checked: the text, for the caller to
    // convert (jit keeps Python's int/float distinction).
    std::string_view read_number_text();
    // Skips one value of any type, checking its syntax.
    void skip_value(int depth = 0);

    // Raises "<where>: invalid JSON in <subject> at byte <pos>: <what>".
    [[noreturn]] void error(const std::string& what) const { error_at(pos_, what); }
    [[noreturn]] void error_at(std::size_t pos, const std::string& what) const;
    std::size_t position() const noexcept { return pos_; }

private:
    void skip_literal(std::string_view word);
    void skip_number();
    uint32_t read_hex4();

    std::string_view text_;
    std::string where_;
    std::string subject_;
    std::size_t pos_ = 0;
};

// Appends `text` as a JSON string literal, escaped as serde_json escapes (", \, \b, \f,
// \n, \r, \t, other control characters as \u00xx; everything else, UTF-8 included, as is).
void append_json_string(std::string& out, std::string_view text);

}  // namespace ember::serialize::detail
