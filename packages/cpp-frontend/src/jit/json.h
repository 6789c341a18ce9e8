// Private: a small, complete JSON reader for the program that an .ember file carries in its
// safetensors metadata (FORMAT.md). On serialize/json.h's cursor (which lexes), it builds a
// document tree: programs nest graphs, nodes, arguments and size
// expressions. Numbers keep Python's distinction: a literal with a fraction or an exponent is
// a float (json.dumps writes 1.0, 1e-05), one without is an int (it must fit in 64 bits).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::jit::detail {

class Json {
public:
    enum class Kind { Null, Bool, Int, Float, String, Array, Object };

    Json() = default;
    static Json boolean(bool v);
    static Json integer(int64_t v);
    static Json number(double v);
    static Json string(std::string v);
    static Json array(std::vector<Json> v);
    static Json object(std::vector<std::pair<std::string, Json>> v);

    Kind kind() const noexcept { return kind_; }
    bool is_null() const noexcept { return kind_ == Kind::Null; }
    bool is_bool() const noexcept { return kind_ == Kind::Bool; }
    bool is_int() const noexcept { return kind_ == Kind::Int; }
    bool is_float() const noexcept { return kind_ == Kind::Float; }
    bool is_string() const noexcept { return kind_ == Kind::String; }
    bool is_array() const noexcept { return kind_ == Kind::Array; }
    bool is_object() const noexcept { return kind_ == Kind::Object; }

    // The value; each raises ember::Error when the kind differs (`what` names the field).
    bool as_bool(const std::string& what) const;
    int64_t as_int(const std::string& what) const;
    double as_float(const std::string& what) const;  // an int converts
    const std::string& as_string(const std::string& what) const;
    const std::vector<Json>& as_array(const std::string& what) const;
    const std::vector<std::pair<std::string, Json>>& as_object(const std::string& what) const;

    // An object's member (nullptr when absent or when this is not an object).
    const Json* find(std::string_view key) const noexcept;
    // An object with exactly one member ({"tensor": "x"}): its key, or "" otherwise.
    std::string_view single_key() const noexcept;
    const Json& single_value() const noexcept { return object_.front().second; }

    // Compact JSON text (for error messages), cut to about `limit` characters.
    std::string dump(std::size_t limit = 200) const;

private:
    void dump_to(std::string& out, std::size_t limit) const;

    Kind kind_ = Kind::Null;
    bool bool_ = false;
    int64_t int_ = 0;
    double float_ = 0;
    std::string string_;
    std::vector<Json> array_;
    std::vector<std::pair<std::string, Json>> object_;
};

// Parses `text` (RFC 8259, lexed by serialize/json.h's cursor; nesting deeper than 512 levels
// is refused). Errors are ember::Error "<where>: invalid JSON in the program at byte N: <what>".
Json parse_json(std::string_view text, const std::string& where);

// A human-readable kind name ("an object", "a string", ...).
const char* kind_name(Json::Kind kind) noexcept;

}  // namespace ember::jit::detail
