#include "jit/json.h"

#include <charconv>
#include <cstdio>
#include <limits>
#include <system_error>

#include "ember/error.h"
#include "serialize/common.h"
#include "serialize/json.h"

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

// The document tree over serialize's JSON cursor (which does the lexing and its errors).
class Parser {
public:
    Parser(std::string_view text, const std::string& where) : c_(text, where, "the program") {}

    Json document() {
        Json v = value(0);
        if (!c_.at_end()) c_.error("trailing characters after the JSON value");
        return v;
    }

private:
    Json value(int depth) {
        if (depth > kMaxDepth) c_.error("nesting deeper than 512 levels");
        char c = c_.peek();
        switch (c) {
            case '{': return object(depth);
            case '[': return array(depth);
            case '"': return Json::string(c_.read_string());
            case 't': c_.read_literal("true"); return Json::boolean(true);
            case 'f': c_.read_literal("false"); return Json::boolean(false);
            case 'n': c_.read_literal("null"); return Json();
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number();
                if (c_.at_end()) c_.error("unexpected end of the program, expected a value");
                c_.error(std::string("expected a value, found ") +
                         serialize::detail::quoted(std::string_view(&c, 1)));
        }
    }

    Json object(int depth) {
        c_.expect('{', "'{'");
        std::vector<std::pair<std::string, Json>> members;
        if (c_.consume('}')) return Json::object(std::move(members));
        do {
            if (c_.peek() != '"') c_.error("expected a string key");
            std::string key = c_.read_string();
            c_.expect(':', "':'");
            members.emplace_back(std::move(key), value(depth + 1));
        } while (c_.consume(','));
        c_.expect('}', "',' or '}'");
        return Json::object(std::move(members));
    }

    Json array(int depth) {
        c_.expect('[', "'['");
        std::vector<Json> items;
        if (c_.consume(']')) return Json::array(std::move(items));
        do {
            items.push_back(value(depth + 1));
        } while (c_.consume(','));
        c_.expect(']', "',' or ']'");
        return Json::array(std::move(items));
    }

    // Python's distinction: a fraction or an exponent makes a float, else an int.
    Json number() {
        std::size_t start = c_.position();
        std::string_view text = c_.read_number_text();
        const char* first = text.data();
        const char* last = text.data() + text.size();
        if (text.find_first_of(".eE") != std::string_view::npos) {
            // from_chars: no locale; an overflow is +-inf and an underflow 0, as Python's float()
            double v = 0;
            auto [ptr, ec] = std::from_chars(first, last, v);
            if (ec == std::errc::result_out_of_range) {
                bool negative = *first == '-';
                std::size_t e = text.find_first_of("eE");
                const bool tiny = e != std::string_view::npos && e + 1 < text.size() &&
                                  text[e + 1] == '-';
                v = tiny ? (negative ? -0.0 : 0.0)
                         : (negative ? -std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::infinity());
            } else if (ec != std::errc() || ptr != last) {
                c_.error_at(start, "invalid number");
            }
            return Json::number(v);
        }
        int64_t v = 0;
        auto [ptr, ec] = std::from_chars(first, last, v);
        if (ec == std::errc::result_out_of_range) {
            c_.error_at(start, "the integer " + std::string(text) + " does not fit in 64 bits");
        }
        if (ec != std::errc() || ptr != last) c_.error_at(start, "invalid number");
        return Json::integer(v);
    }

    serialize::detail::JsonCursor c_;
};

}  // namespace

Json parse_json(std::string_view text, const std::string& where) {
    return Parser(text, where).document();
}

}  // namespace ember::jit::detail
