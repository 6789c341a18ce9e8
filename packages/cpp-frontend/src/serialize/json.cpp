#include "serialize/json.h"

#include "serialize/common.h"

namespace ember::serialize::detail {

namespace {
bool is_ws(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
}  // namespace

void JsonCursor::error_at(std::size_t pos, const std::string& what) const {
    fail(where_, "invalid JSON in ", subject_, " at byte ", pos, ": ", what);
}

void JsonCursor::skip_whitespace() noexcept {
    while (pos_ < text_.size() && is_ws(text_[pos_])) ++pos_;
}

char JsonCursor::peek() {
    skip_whitespace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
}

bool JsonCursor::at_end() {
    skip_whitespace();
    return pos_ >= text_.size();
}

void JsonCursor::expect(char c, const char* what) {
    skip_whitespace();
    if (pos_ >= text_.size()) error("unexpected end of " + subject_ + ", expected " + what);
    if (text_[pos_] != c) {
        error(std::string("expected ") + what + ", found " + quoted(text_.substr(pos_, 1)));
    }
    ++pos_;
}

bool JsonCursor::consume(char c) {
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == c) {
        ++pos_;
        return true;
    }
    return false;
}

uint32_t JsonCursor::read_hex4() {
    if (text_.size() - pos_ < 4) error("unexpected end of a \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
        char c = text_[pos_++];
        uint32_t d;
        if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
        else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
        else error("invalid \\u escape");
        v = (v << 4) | d;
    }
    return v;
}

std::string JsonCursor::read_string() {
    expect('"', "a string");
    std::string out;
    for (;;) {
        if (pos_ >= text_.size()) error("unterminated string");
        char c = text_[pos_];
        if (c == '"') {
            ++pos_;
            return out;
        }
        if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
        if (c != '\\') {
            // copy the run up to the next quote, backslash or control character
            std::size_t start = pos_;
            while (pos_ < text_.size()) {
                char d = text_[pos_];
                if (d == '"' || d == '\\' || static_cast<unsigned char>(d) < 0x20) break;
                ++pos_;
            }
            out.append(text_.data() + start, pos_ - start);
            continue;
        }
        ++pos_;
        if (pos_ >= text_.size()) error("unterminated escape");
        char e = text_[pos_++];
        switch (e) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                uint32_t cp = read_hex4();
                if (cp >= 0xdc00 && cp <= 0xdfff) error("lone surrogate in a \\u escape");
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
                        error("lone surrogate in a \\u escape");
                    }
                    pos_ += 2;
                    uint32_t low = read_hex4();
                    if (low < 0xdc00 || low > 0xdfff) error("lone surrogate in a \\u escape");
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                }
                append_utf8(out, cp);
                break;
            }
            default:
                --pos_;
                error("invalid escape " + quoted(text_.substr(pos_ - 1, 2)));
        }
    }
}

uint64_t JsonCursor::read_u64(const char* what) {
    skip_whitespace();
    std::size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') {
        error(std::string("expected ") + what + " (a non-negative integer), found a negative number");
    }
    if (pos_ >= text_.size() || !is_digit(text_[pos_])) {
        error(std::string("expected ") + what + " (a non-negative integer)");
    }
    uint64_t v = 0;
    bool overflow = false;
    if (text_[pos_] == '0') {
        ++pos_;
        if (pos_ < text_.size() && is_digit(text_[pos_])) error("invalid number (leading zero)");
    } else {
        while (pos_ < text_.size() && is_digit(text_[pos_])) {
            overflow |= !checked_mul(v, 10, &v);
            overflow |= !checked_add(v, static_cast<uint64_t>(text_[pos_] - '0'), &v);
            ++pos_;
        }
    }
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
        pos_ = start;
        error(std::string("expected ") + what + " (a non-negative integer), found a floating point number");
    }
    if (overflow) {
        pos_ = start;
        error(std::string(what) + " does not fit in 64 bits");
    }
    return v;
}

bool JsonCursor::consume_null() {
    skip_whitespace();
    if (text_.substr(pos_, 4) == "null") {
        pos_ += 4;
        return true;
    }
    return false;
}

void JsonCursor::skip_literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) error("invalid literal");
    pos_ += word.size();
}

std::string_view JsonCursor::read_number_text() {
    skip_whitespace();
    std::size_t start = pos_;
    skip_number();
    return text_.substr(start, pos_ - start);
}

void JsonCursor::skip_number() {
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    if (pos_ >= text_.size() || !is_digit(text_[pos_])) error("invalid number");
    if (text_[pos_] == '0') {
        ++pos_;
        if (pos_ < text_.size() && is_digit(text_[pos_])) error("invalid number (leading zero)");
    } else {
        while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
        ++pos_;
        if (pos_ >= text_.size() || !is_digit(text_[pos_])) error("invalid number");
        while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
        ++pos_;
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
        if (pos_ >= text_.size() || !is_digit(text_[pos_])) error("invalid number");
        while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
}

void JsonCursor::skip_value(int depth) {
    if (depth >= kMaxDepth) error("nesting deeper than 128 levels");
    char c = peek();
    switch (c) {
        case '{':
            ++pos_;
            if (consume('}')) return;
            do {
                read_string();
                expect(':', "':'");
                skip_value(depth + 1);
            } while (consume(','));
            expect('}', "',' or '}'");
            return;
        case '[':
            ++pos_;
            if (consume(']')) return;
            do {
                skip_value(depth + 1);
            } while (consume(','));
            expect(']', "',' or ']'");
            return;
        case '"':
            read_string();
            return;
        case 't': skip_literal("true"); return;
        case 'f': skip_literal("false"); return;
        case 'n': skip_literal("null"); return;
        case '\0':
            if (pos_ >= text_.size()) error("unexpected end of " + subject_ + ", expected a value");
            error("expected a value");
        default:
            if (c == '-' || is_digit(c)) {
                skip_number();
                return;
            }
            error("expected a value, found " + quoted(text_.substr(pos_, 1)));
    }
}

void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (char c : text) {
        auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (u < 0x20) {
                    out += "\\u00";
                    out += kHex[u >> 4];
                    out += kHex[u & 15];
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

}  // namespace ember::serialize::detail
