#include "jit/json.h"

#include <charconv>
#include <cstdio>
#include <limits>
#include <system_error>

#include "ember/error.h"
#include "serialize/common.h"

namespace ember::jit::detail {

// ------------------------------------------------------------------------------ Json

Json Json::boolean(bool v) {
    Json j;
    j.kind_ = Kind::Bool;
    j.bool_ = v;
    return j;
}

Json Json::integer(int64_t v) {
    Json j;
    j.kind_ = Kind::Int;
    j.int_ = v;
    return j;
}

Json Json::number(double v) {
    Json j;
    j.kind_ = Kind::Float;
    j.float_ = v;
    return j;
}

Json Json::string(std::string v) {
    Json j;
    j.kind_ = Kind::String;
    j.string_ = std::move(v);
    return j;
}

Json Json::array(std::vector<Json> v) {
    Json j;
    j.kind_ = Kind::Array;
    j.array_ = std::move(v);
    return j;
}

Json Json::object(std::vector<std::pair<std::string, Json>> v) {
    Json j;
    j.kind_ = Kind::Object;
    j.object_ = std::move(v);
    return j;
}

const char* kind_name(Json::Kind kind) noexcept {
    switch (kind) {
        case Json::Kind::Null: return "null";
        case Json::Kind::Bool: return "a bool";
        case Json::Kind::Int: return "an int";
        case Json::Kind::Float: return "a float";
        case Json::Kind::String: return "a string";
        case Json::Kind::Array: return "an array";
        case Json::Kind::Object: return "an object";
    }
    return "a value";
}

namespace {
[[noreturn]] void wrong_kind(const std::string& what, const char* want, const Json& got) {
    throw Error(what + ": expected " + want + ", got " + kind_name(got.kind()) + " " + got.dump(80));
}
}  // namespace

bool Json::as_bool(const std::string& what) const {
    if (kind_ != Kind::Bool) wrong_kind(what, "a bool", *this);
    return bool_;
}

int64_t Json::as_int(const std::string& what) const {
    if (kind_ != Kind::Int) wrong_kind(what, "an int", *this);
    return int_;
}

double Json::as_float(const std::string& what) const {
    if (kind_ == Kind::Int) return static_cast<double>(int_);
    if (kind_ != Kind::Float) wrong_kind(what, "a number", *this);
    return float_;
}

const std::string& Json::as_string(const std::string& what) const {
    if (kind_ != Kind::String) wrong_kind(what, "a string", *this);
    return string_;
}

const std::vector<Json>& Json::as_array(const std::string& what) const {
    if (kind_ != Kind::Array) wrong_kind(what, "an array", *this);
    return array_;
}

const std::vector<std::pair<std::string, Json>>& Json::as_object(const std::string& what) const {
    if (kind_ != Kind::Object) wrong_kind(what, "an object", *this);
    return object_;
}

const Json* Json::find(std::string_view key) const noexcept {
    if (kind_ != Kind::Object) return nullptr;
    // the last of repeated keys wins, as Python's json.loads
    for (auto it = object_.rbegin(); it != object_.rend(); ++it) {
        if (it->first == key) return &it->second;
    }
    return nullptr;
}

std::string_view Json::single_key() const noexcept {
    if (kind_ != Kind::Object || object_.size() != 1) return {};
    return object_.front().first;
}

std::string Json::dump(std::size_t limit) const {
    std::string out;
    dump_to(out, limit);
    if (out.size() > limit) {
        out.resize(limit);
        out += "...";
    }
    return out;
}

namespace {
void append_quoted(std::string& out, const std::string& s) {
    out += '"';
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
        } else {
            out += c;
        }
    }
    out += '"';
}
}  // namespace

void Json::dump_to(std::string& out, std::size_t limit) const {
    if (out.size() > limit) return;
    switch (kind_) {
        case Kind::Null: out += "null"; return;
        case Kind::Bool: out += bool_ ? "true" : "false"; return;
        case Kind::Int: out += std::to_string(int_); return;
        case Kind::Float: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", float_);
            out += buf;
            return;
        }
        case Kind::String: append_quoted(out, string_); return;
        case Kind::Array:
            out += '[';
            for (std::size_t i = 0; i < array_.size() && out.size() <= limit; ++i) {
                if (i) out += ", ";
                array_[i].dump_to(out, limit);
            }
            out += ']';
            return;
        case Kind::Object:
            out += '{';
            for (std::size_t i = 0; i < object_.size() && out.size() <= limit; ++i) {
                if (i) out += ", ";
                append_quoted(out, object_[i].first);
                out += ": ";
                object_[i].second.dump_to(out, limit);
            }
            out += '}';
            return;
    }
}

// ---------------------------------------------------------------------------- parser

namespace {

constexpr int kMaxDepth = 512;

class Parser {
public:
    Parser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

    Json document() {
        Json v = value(0);
        skip_ws();
        if (pos_ != text_.size()) error("trailing characters after the JSON value");
        return v;
    }

private:
    [[noreturn]] void error(const std::string& what) const {
        throw Error(where_ + ": invalid JSON at byte " + std::to_string(pos_) + ": " + what);
    }

    void skip_ws() noexcept {
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
            ++pos_;
        }
    }

    char peek() {
        skip_ws();
        return pos_ < text_.size() ? text_[pos_] : '\0';
    }

    void expect(char c, const char* what) {
        skip_ws();
        if (pos_ >= text_.size()) error(std::string("unexpected end, expected ") + what);
        if (text_[pos_] != c) {
            error(std::string("expected ") + what + ", found " +
                  serialize::detail::quoted(text_.substr(pos_, 1)));
        }
        ++pos_;
    }

    bool consume(char c) {
        skip_ws();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    Json value(int depth) {
        if (depth > kMaxDepth) error("nesting deeper than 512 levels");
        char c = peek();
        switch (c) {
            case '{': return object(depth);
            case '[': return array(depth);
            case '"': return Json::string(string());
            case 't': literal("true"); return Json::boolean(true);
            case 'f': literal("false"); return Json::boolean(false);
            case 'n': literal("null"); return Json();
            case '\0':
                if (pos_ >= text_.size()) error("unexpected end, expected a value");
                error("expected a value");
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number();
                error("expected a value, found " + serialize::detail::quoted(text_.substr(pos_, 1)));
        }
    }

    Json object(int depth) {
        expect('{', "'{'");
        std::vector<std::pair<std::string, Json>> members;
        if (consume('}')) return Json::object(std::move(members));
        do {
            if (peek() != '"') error("expected a string key");
            std::string key = string();
            expect(':', "':'");
            members.emplace_back(std::move(key), value(depth + 1));
        } while (consume(','));
        expect('}', "',' or '}'");
        return Json::object(std::move(members));
    }

    Json array(int depth) {
        expect('[', "'['");
        std::vector<Json> items;
        if (consume(']')) return Json::array(std::move(items));
        do {
            items.push_back(value(depth + 1));
        } while (consume(','));
        expect(']', "',' or ']'");
        return Json::array(std::move(items));
    }

    void literal(std::string_view word) {
        if (text_.substr(pos_, word.size()) != word) error("invalid literal");
        pos_ += word.size();
    }

    uint32_t hex4() {
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

    std::string string() {
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
                out += c;
                ++pos_;
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
                    uint32_t cp = hex4();
                    if (cp >= 0xd800 && cp <= 0xdbff && text_.substr(pos_, 2) == "\\u") {
                        std::size_t save = pos_;
                        pos_ += 2;
                        uint32_t low = hex4();
                        if (low >= 0xdc00 && low <= 0xdfff) {
                            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                        } else {
                            pos_ = save;
                        }
                    }
                    if (cp >= 0xd800 && cp <= 0xdfff) error("lone surrogate in a \\u escape");
                    serialize::detail::append_utf8(out, cp);
                    break;
                }
                default: --pos_; error("invalid escape");
            }
        }
    }

    Json number() {
        std::size_t start = pos_;
        bool is_float = false;
        if (text_[pos_] == '-') ++pos_;
        auto digits = [&] {
            std::size_t from = pos_;
            while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
            if (pos_ == from) error("invalid number");
        };
        if (pos_ < text_.size() && text_[pos_] == '0') {
            ++pos_;
            if (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
                error("invalid number (leading zero)");
            }
        } else {
            digits();
        }
        if (pos_ < text_.size() && text_[pos_] == '.') {
            ++pos_;
            is_float = true;
            digits();
        }
        if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
            ++pos_;
            is_float = true;
            if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
            digits();
        }
        const char* first = text_.data() + start;
        const char* last = text_.data() + pos_;
        if (is_float) {
            // from_chars: no locale; an overflow is +-inf and an underflow 0, as Python's float()
            double v = 0;
            auto [ptr, ec] = std::from_chars(first, last, v);
            if (ec == std::errc::result_out_of_range) {
                bool negative = *first == '-';
                const char* e = first;
                while (e != last && *e != 'e' && *e != 'E') ++e;
                const bool tiny = e != last && e + 1 != last && e[1] == '-';
                v = tiny ? (negative ? -0.0 : 0.0)
                         : (negative ? -std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::infinity());
            } else if (ec != std::errc() || ptr != last) {
                error("invalid number");
            }
            return Json::number(v);
        }
        int64_t v = 0;
        auto [ptr, ec] = std::from_chars(first, last, v);
        if (ec == std::errc::result_out_of_range) {
            pos_ = start;
            error("the integer " + std::string(first, last) + " does not fit in 64 bits");
        }
        if (ec != std::errc() || ptr != last) error("invalid number");
        return Json::integer(v);
    }

    std::string_view text_;
    const std::string& where_;
    std::size_t pos_ = 0;
};

}  // namespace

Json parse_json(std::string_view text, const std::string& where) {
    return Parser(text, where).document();
}

}  // namespace ember::jit::detail
