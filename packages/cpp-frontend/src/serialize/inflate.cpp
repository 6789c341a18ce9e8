// DEFLATE decoding (RFC 1951): stored, fixed-Huffman and dynamic-Huffman blocks.
//
// Huffman codes are decoded through a table indexed by the next kRootBits bits of the
// stream (codes of at most kRootBits bits, nearly all of them in practice); a longer code,
// or bits that start no code, take the canonical decoding walk over the code lengths. The
// code sets are validated as zlib validates them: over-subscribed sets are refused, and an
// incomplete set only when it is the single one-bit code zlib accepts (a block whose data
// has one distance, say); a block may have no distance codes when it uses none. Error
// texts follow zlib's ("invalid block type", "invalid distance too far back", ...).
#include "serialize/inflate.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace ember::serialize::detail {

namespace {

constexpr int kMaxBits = 15;     // the longest code RFC 1951 allows
constexpr int kRootBits = 10;    // bits of the direct lookup table
constexpr int kMaxLitLen = 288;  // literal/length symbols (286 and 287 are never valid)
constexpr int kMaxDist = 32;     // distance symbols (30 and 31 are never valid)

using Kind = InflateError::Kind;

[[noreturn]] void corrupt(const char* problem) {
    throw InflateError(Kind::Corrupt, std::string("corrupt deflate data: ") + problem);
}

[[noreturn]] void truncated() {
    throw InflateError(Kind::Truncated,
                       "truncated: the compressed data ends before its last deflate block");
}

// A canonical Huffman code: `fast` maps the next kRootBits stream bits to (length << 9 |
// symbol) for codes of at most kRootBits bits (0: use the canonical walk); `count[len]`
// codes have length len, and `sorted` lists the symbols in code order.
struct Huffman {
    std::array<uint16_t, 1u << kRootBits> fast{};
    std::array<uint16_t, kMaxBits + 1> count{};
    std::array<uint16_t, kMaxLitLen> sorted{};
    bool empty = true;  // no symbol has a code
};

uint32_t reverse_bits(uint32_t code, int len) {
    uint32_t out = 0;
    for (int i = 0; i < len; ++i) {
        out = (out << 1) | (code & 1);
        code >>= 1;
    }
    return out;
}

// Builds `h` from the code lengths of symbols 0..n-1; returns false for a set zlib refuses
// (over-subscribed, or incomplete other than a single one-bit code when
// `allow_single_code`). An all-zero set builds an empty code (the caller decides).
bool build(Huffman& h, const uint8_t* lengths, int n, bool allow_single_code) {
    h.count.fill(0);
    h.fast.fill(0);
    for (int s = 0; s < n; ++s) ++h.count[lengths[s]];
    const int used = n - h.count[0];
    h.count[0] = 0;
    h.empty = used == 0;
    if (h.empty) return true;
    int left = 1;  // codes of the current length still unassigned
    for (int len = 1; len <= kMaxBits; ++len) {
        left = (left << 1) - h.count[len];
        if (left < 0) return false;  // over-subscribed
    }
    if (left > 0 && !(allow_single_code && used == 1 && h.count[1] == 1)) return false;

    std::array<uint16_t, kMaxBits + 2> offset{};
    std::array<uint32_t, kMaxBits + 1> next_code{};
    uint32_t code = 0;
    for (int len = 1; len <= kMaxBits; ++len) {
        offset[len + 1] = static_cast<uint16_t>(offset[len] + h.count[len]);
        code = (code + h.count[len - 1]) << 1;
        next_code[len] = code;
    }
    for (int s = 0; s < n; ++s) {
        const int len = lengths[s];
        if (len == 0) continue;
        h.sorted[offset[len]++] = static_cast<uint16_t>(s);
        const uint32_t c = next_code[len]++;
        if (len <= kRootBits) {
            const auto entry = static_cast<uint16_t>(len << 9 | s);
            for (uint32_t i = reverse_bits(c, len); i < h.fast.size(); i += 1u << len) {
                h.fast[i] = entry;
            }
        }
    }
    return true;
}

Huffman fixed_huffman(bool literals) {
    std::array<uint8_t, kMaxLitLen> lengths{};
    if (literals) {
        std::fill(lengths.begin(), lengths.begin() + 144, 8);
        std::fill(lengths.begin() + 144, lengths.begin() + 256, 9);
        std::fill(lengths.begin() + 256, lengths.begin() + 280, 7);
        std::fill(lengths.begin() + 280, lengths.end(), 8);
    } else {
        std::fill(lengths.begin(), lengths.begin() + kMaxDist, 5);
    }
    Huffman h;
    build(h, lengths.data(), literals ? kMaxLitLen : kMaxDist, false);
    return h;
}

// Base values and extra bits of the length symbols 257..285 and distance symbols 0..29.
constexpr uint16_t kLengthBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr uint8_t kLengthExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr uint16_t kDistBase[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,  25,
                                    33,   49,   65,   97,   129,  193,   257,   385,   513, 769,
                                    1025, 1537, 2049, 3073, 4097, 6145,  8193,  12289, 16385, 24577};
constexpr uint8_t kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                    6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
// The order in which a dynamic block lists the code lengths of the code-length code.
constexpr uint8_t kCodeLengthOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

class Inflater {
public:
    Inflater(const std::byte* data, std::size_t size, std::vector<std::byte>& out,
             std::size_t max_out)
        : in_(reinterpret_cast<const uint8_t*>(data)), size_(size), out_(out),
          start_(out.size()), n_(out.size()), max_out_(max_out) {}

    std::size_t run() {
        try {
            bool last = false;
            while (!last) {
                last = bits(1) != 0;
                switch (bits(2)) {
                    case 0: stored_block(); break;
                    case 1: {
                        static const Huffman kFixedLit = fixed_huffman(true);
                        static const Huffman kFixedDist = fixed_huffman(false);
                        huffman_block(kFixedLit, kFixedDist);
                        break;
                    }
                    case 2: dynamic_block(); break;
                    default: corrupt("invalid block type");
                }
            }
        } catch (...) {
            out_.resize(n_);
            throw;
        }
        out_.resize(n_);
        return pos_ - bitcnt_ / 8;  // whole bytes still in the bit buffer were not used
    }

private:
    void refill() {
        while (bitcnt_ <= 56 && pos_ < size_) {
            bitbuf_ |= uint64_t(in_[pos_++]) << bitcnt_;
            bitcnt_ += 8;
        }
    }

    void consume(int n) {
        bitbuf_ >>= n;
        bitcnt_ -= n;
    }

    uint32_t bits(int n) {
        if (bitcnt_ < n) {
            refill();
            if (bitcnt_ < n) truncated();
        }
        const auto v = static_cast<uint32_t>(bitbuf_ & ((uint64_t(1) << n) - 1));
        consume(n);
        return v;
    }

    // The next symbol of code `h`; `invalid`: the message for bits that start no code.
    int decode(const Huffman& h, const char* invalid) {
        if (bitcnt_ < kMaxBits) refill();  // past the end of the input, the bits read as 0
        const uint16_t entry = h.fast[bitbuf_ & ((1u << kRootBits) - 1)];
        if (entry != 0) {
            const int len = entry >> 9;
            if (len > bitcnt_) truncated();
            consume(len);
            return entry & 0x1ff;
        }
        // The canonical walk: codes of each length are consecutive integers.
        uint64_t stream = bitbuf_;
        int code = 0, first = 0, index = 0;
        for (int len = 1; len <= kMaxBits; ++len) {
            code |= static_cast<int>(stream & 1);
            stream >>= 1;
            const int count = h.count[len];
            if (code - first < count) {
                if (len > bitcnt_) truncated();
                consume(len);
                return h.sorted[index + code - first];
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        if (bitcnt_ < kMaxBits) truncated();
        corrupt(invalid);
    }

    // Room for `n` more output bytes.
    void reserve(std::size_t n) {
        if (n > max_out_ - n_ || max_out_ < n_) {
            throw InflateError(Kind::TooLarge, "the data inflates to more than " +
                                                   std::to_string(max_out_) + " bytes");
        }
        if (n_ + n > out_.size()) {
            std::size_t want = std::max({n_ + n, out_.size() * 2, std::size_t(1) << 16});
            out_.resize(std::min(want, max_out_));
        }
    }

    void stored_block() {
        consume(bitcnt_ % 8);  // to the byte boundary
        pos_ -= static_cast<std::size_t>(bitcnt_ / 8);
        bitbuf_ = 0;
        bitcnt_ = 0;
        if (size_ - pos_ < 4) truncated();
        const uint32_t len = in_[pos_] | uint32_t(in_[pos_ + 1]) << 8;
        const uint32_t nlen = in_[pos_ + 2] | uint32_t(in_[pos_ + 3]) << 8;
        pos_ += 4;
        if (len != (~nlen & 0xffff)) corrupt("invalid stored block lengths");
        if (size_ - pos_ < len) truncated();
        reserve(len);
        if (len != 0) std::memcpy(out_.data() + n_, in_ + pos_, len);
        n_ += len;
        pos_ += len;
    }

    void dynamic_block() {
        const int nlit = static_cast<int>(bits(5)) + 257;
        const int ndist = static_cast<int>(bits(5)) + 1;
        const int ncode = static_cast<int>(bits(4)) + 4;
        if (nlit > 286 || ndist > 30) corrupt("too many length or distance symbols");

        std::array<uint8_t, 19> code_lengths{};
        for (int i = 0; i < ncode; ++i) code_lengths[kCodeLengthOrder[i]] = static_cast<uint8_t>(bits(3));
        Huffman lengths_code;
        if (!build(lengths_code, code_lengths.data(), 19, false) || lengths_code.empty) {
            corrupt("invalid code lengths set");
        }

        std::array<uint8_t, kMaxLitLen + kMaxDist> lengths{};
        int i = 0;
        while (i < nlit + ndist) {
            const int sym = decode(lengths_code, "invalid code lengths set");
            if (sym < 16) {
                lengths[i++] = static_cast<uint8_t>(sym);
                continue;
            }
            uint8_t value = 0;
            int repeat;
            if (sym == 16) {
                if (i == 0) corrupt("invalid bit length repeat");
                value = lengths[i - 1];
                repeat = 3 + static_cast<int>(bits(2));
            } else if (sym == 17) {
                repeat = 3 + static_cast<int>(bits(3));
            } else {
                repeat = 11 + static_cast<int>(bits(7));
            }
            if (i + repeat > nlit + ndist) corrupt("invalid bit length repeat");
            std::fill_n(lengths.begin() + i, repeat, value);
            i += repeat;
        }
        if (lengths[256] == 0) corrupt("invalid code -- missing end-of-block");
        if (!build(lit_, lengths.data(), nlit, true)) corrupt("invalid literal/lengths set");
        if (!build(dist_, lengths.data() + nlit, ndist, true)) corrupt("invalid distances set");
        huffman_block(lit_, dist_);
    }

    void huffman_block(const Huffman& lit, const Huffman& dist) {
        for (;;) {
            int sym = decode(lit, "invalid literal/length code");
            if (sym < 256) {
                if (n_ == out_.size()) reserve(1);
                out_[n_++] = static_cast<std::byte>(sym);
                continue;
            }
            if (sym == 256) return;
            sym -= 257;
            if (sym >= 29) corrupt("invalid literal/length code");
            const std::size_t len = kLengthBase[sym] + bits(kLengthExtra[sym]);
            if (dist.empty) corrupt("invalid distance code");
            const int dsym = decode(dist, "invalid distance code");
            if (dsym >= 30) corrupt("invalid distance code");
            const std::size_t distance = kDistBase[dsym] + bits(kDistExtra[dsym]);
            if (distance > n_ - start_) corrupt("invalid distance too far back");
            reserve(len);
            std::byte* dst = out_.data() + n_;
            const std::byte* src = dst - distance;
            if (distance >= len) {
                std::memcpy(dst, src, len);
            } else {  // overlapping: the copy repeats the last `distance` bytes
                for (std::size_t k = 0; k < len; ++k) dst[k] = src[k];
            }
            n_ += len;
        }
    }

    const uint8_t* in_;
    std::size_t size_;
    std::size_t pos_ = 0;
    uint64_t bitbuf_ = 0;
    int bitcnt_ = 0;
    std::vector<std::byte>& out_;
    std::size_t start_;  // where this stream's output begins in out_
    std::size_t n_;      // bytes of out_ in use (out_ is sized ahead)
    std::size_t max_out_;
    Huffman lit_, dist_;  // the current dynamic block's codes
};

}  // namespace

std::size_t inflate(const std::byte* data, std::size_t size, std::vector<std::byte>& out,
                    std::size_t max_out) {
    return Inflater(data, size, out, max_out).run();
}

}  // namespace ember::serialize::detail
