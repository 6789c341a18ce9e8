// F::pad: constant padding (aten's constant_pad_nd: negative pads narrow the input, the rest
// is a copy into a filled tensor; node ConstantPadNdBackward0, whose backward is the opposite
// constant padding) and reflect / replicate / circular padding (each padded dim gathered by
// index_select at the input position every output position reads; one node,
// ReflectionPad<k>DBackward0 / ReplicationPad<k>DBackward0 / CircularPadBackward0, whose
// backward adds the gradient back with index_add). Both backwards are written with
// differentiable ops, so gradients of gradients work. Errors are PyTorch's (aten's _pad_enum,
// constant_pad_nd, reflection_pad*d, replication_pad*d and _pad_circular).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "common.h"

namespace ember {
namespace nn {
namespace functional {

using namespace detail;

namespace {

enum class Mode { Constant, Reflect, Replicate, Circular };

const char* mode_name(Mode m) {
    switch (m) {
        case Mode::Constant: return "constant";
        case Mode::Reflect: return "reflect";
        case Mode::Replicate: return "replicate";
        case Mode::Circular: return "circular";
    }
    return "";
}

Mode mode_from_string(std::string_view s) {
    if (s == "constant") return Mode::Constant;
    if (s == "reflect") return Mode::Reflect;
    if (s == "replicate") return Mode::Replicate;
    if (s == "circular") return Mode::Circular;
    throw NotImplementedError("Unrecognised padding mode " + std::string(s));
}

Mode mode_from_options(const PadFuncOptions::mode_t& m) { return mode_from_string(enumtype::enum_name(m)); }

// constant_pad_nd: pad[2 * i], pad[2 * i + 1] pad dim dim() - 1 - i.
Tensor constant_pad(const Tensor& self, const std::vector<int64_t>& pad, double value) {
    const int64_t nd = self.dim();
    const auto npad = static_cast<int64_t>(pad.size() / 2);
    // negative pads crop first (differentiable views)
    Tensor core = self;
    bool all_pads_non_positive = true;
    for (int64_t d = nd - npad; d < nd; ++d) {
        const auto i = static_cast<size_t>(2 * (nd - 1 - d));
        if (pad[i] < 0) {
            core = core.narrow(d, -pad[i], core.size(d) + pad[i]);
        } else if (pad[i] != 0) {
            all_pads_non_positive = false;
        }
        if (pad[i + 1] < 0) {
            core = core.narrow(d, 0, core.size(d) + pad[i + 1]);
        } else if (pad[i + 1] != 0) {
            all_pads_non_positive = false;
        }
    }
    if (all_pads_non_positive) return core.clone();
    std::vector<int64_t> shape = self.sizes().vec();
    for (int64_t d = nd - npad; d < nd; ++d) {
        const auto i = static_cast<size_t>(2 * (nd - 1 - d));
        const int64_t size = shape[static_cast<size_t>(d)] + pad[i] + pad[i + 1];
        EMBER_CHECK(size >= 0, "The input size ", shape[static_cast<size_t>(d)], ", plus negative padding ", pad[i],
                    " and ", pad[i + 1], " resulted in a negative output size, which is invalid. Check dimension ", d,
                    " of your input.");
        shape[static_cast<size_t>(d)] = size;
    }
    Tensor out = full(shape, value, TensorOptions(self.scalar_type()));
    std::vector<int64_t> positive(pad.size());
    {
        NoGradGuard guard;
        Tensor inner = out;
        for (int64_t d = nd - npad; d < nd; ++d) {
            const auto i = static_cast<size_t>(2 * (nd - 1 - d));
            inner = inner.narrow(d, std::max<int64_t>(pad[i], 0), core.size(d));
        }
        inner.copy_(core);
    }
    if (auto node = make_node("ConstantPadNdBackward0", {core})) {
        set_history(out, node, 0);
        // the gradient of core: the opposite of the positive pads (a crop)
        for (size_t i = 0; i < pad.size(); ++i) positive[i] = -std::max<int64_t>(pad[i], 0);
        node->set_formula([positive](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {constant_pad(g[0], positive, 0.0)};
        });
    }
    return out;
}

// The input position each output position of a dim of size n reads, padded by (lo, hi).
std::vector<int64_t> pad_index(Mode mode, int64_t n, int64_t lo, int64_t hi) {
    const int64_t m = n + lo + hi;
    std::vector<int64_t> idx(static_cast<size_t>(m));
    // circular: the input cropped by the negative pads, then wrapped around
    const int64_t start = std::max<int64_t>(-lo, 0);
    const int64_t kept = n - start - std::max<int64_t>(-hi, 0);
    for (int64_t j = 0; j < m; ++j) {
        int64_t o = j - lo;
        if (mode == Mode::Reflect) {
            o = std::abs(o);
            if (o >= n) o = 2 * (n - 1) - o;
        } else if (mode == Mode::Replicate) {
            o = std::clamp<int64_t>(o, 0, n - 1);
        } else {
            const int64_t k = (j - std::max<int64_t>(lo, 0)) % kept;
            o = start + (k < 0 ? k + kept : k);
        }
        idx[static_cast<size_t>(j)] = o;
    }
    return idx;
}

Tensor long_tensor(const std::vector<int64_t>& v) {
    Tensor t = empty({static_cast<int64_t>(v.size())}, kLong);
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    return t;
}

const char* node_name(Mode mode, int64_t npad) {
    static const char* const reflect[] = {"ReflectionPad1DBackward0", "ReflectionPad2DBackward0",
                                          "ReflectionPad3DBackward0"};
    static const char* const replicate[] = {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0",
                                            "ReplicationPad3DBackward0"};
    if (mode == Mode::Circular) return "CircularPadBackward0";
    return (mode == Mode::Reflect ? reflect : replicate)[npad - 1];
}

// reflect / replicate / circular over the last npad (1 to 3) dims, arguments checked.
Tensor index_pad(const Tensor& self, const std::vector<int64_t>& pad, Mode mode) {
    const int64_t nd = self.dim();
    const auto npad = static_cast<int64_t>(pad.size() / 2);
    std::vector<int64_t> dims;
    std::vector<Tensor> indices;
    std::vector<std::vector<int64_t>> shapes;  // the shape before each gather
    Tensor out = self;
    {
        NoGradGuard guard;
        for (int64_t k = 0; k < npad; ++k) {
            const int64_t d = nd - 1 - k;
            const int64_t lo = pad[static_cast<size_t>(2 * k)], hi = pad[static_cast<size_t>(2 * k + 1)];
            if (lo == 0 && hi == 0) continue;
            dims.push_back(d);
            indices.push_back(long_tensor(pad_index(mode, out.size(d), lo, hi)));
            shapes.push_back(out.sizes().vec());
            out = out.index_select(d, indices.back());
        }
        if (dims.empty()) out = self.clone();
    }
    if (auto node = make_node(node_name(mode, npad), {self})) {
        set_history(out, node, 0);
        node->set_formula([dims, indices, shapes](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            Tensor grad = g[0];
            for (size_t i = dims.size(); i-- > 0;) {
                grad = zeros(shapes[i], TensorOptions(grad.scalar_type())).index_add(dims[i], indices[i], grad);
            }
            return {dims.empty() ? grad.clone() : grad};
        });
    }
    return out;
}

// aten's padding::check_valid_input<k>: every dim but an optional batch dim non-empty.
void check_valid_input(const Tensor& input, int64_t k) {
    const bool batch_mode = input.dim() == k + 2;
    bool valid = true;
    for (int64_t d = batch_mode ? 1 : 0; d < input.dim(); ++d) valid = valid && input.size(d) != 0;
    EMBER_CHECK(valid, "Expected ", k + 1, "D or ", k + 2,
                "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
                input.sizes());
}

// The output sizes of reflect / replicate padding, with PyTorch's errors: in 1-D an output
// below 1; in 2-D / 3-D "too small" only when every padded dim comes out below 1 (a padded
// dim may become empty), else a negative size is the error of creating the output.
void check_output_size(const Tensor& input, const std::vector<int64_t>& pad, Mode mode) {
    const auto npad = static_cast<int64_t>(pad.size() / 2);
    const int64_t nd = input.dim();
    std::vector<int64_t> shape = input.sizes().vec();
    bool all_below_one = true;
    for (int64_t k = 0; k < npad; ++k) {
        const auto d = static_cast<size_t>(nd - 1 - k);
        shape[d] += pad[static_cast<size_t>(2 * k)] + pad[static_cast<size_t>(2 * k + 1)];
        all_below_one = all_below_one && shape[d] < 1;
    }
    const auto in = [&](int64_t d) { return input.size(d); };
    const auto out = [&](int64_t d) { return shape[static_cast<size_t>(nd + d)]; };
    if (npad == 1) {
        EMBER_CHECK(out(-1) >= 1, "input (W: ", in(-1), ") is too small. Calculated output W: ", out(-1));
        return;
    }
    // (replication_pad2d's message has a space before its parenthesis)
    if (npad == 2) {
        EMBER_CHECK(!all_below_one, "input (H: ", in(-2), ", W: ", in(-1), mode == Mode::Replicate ? " )" : ")",
                    " is too small. Calculated output H: ", out(-2), " W: ", out(-1));
    } else {
        EMBER_CHECK(!all_below_one, "input (D: ", in(-3), " H: ", in(-2), ", W: ", in(-1),
                    ") is too small. Calculated output D: ", out(-3), " H: ", out(-2), " W: ", out(-1));
    }
    for (int64_t size : shape) {
        EMBER_CHECK(size >= 0, "Trying to create tensor with negative dimension ", size, ": ", IntArrayRef(shape));
    }
}

Tensor pad_impl(const Tensor& input, IntArrayRef pad_ref, Mode mode, std::optional<double> value) {
    const std::vector<int64_t> pad = pad_ref.vec();
    const auto n = static_cast<int64_t>(pad.size());
    const int64_t nd = input.dim();
    EMBER_CHECK(n % 2 == 0, "Padding length must be divisible by 2");
    EMBER_CHECK(n <= 2 * nd, "Padding length should be less than or equal to two times the input dimension but got "
                             "padding length ", n, " and input of dimension ", nd);
    if (mode == Mode::Constant) return constant_pad(input, pad, value.value_or(0.0));
    EMBER_CHECK(!value.has_value() || *value == 0, "Padding mode \"", mode_name(mode),
                "\" doesn't take in value argument");
    const int64_t npad = n / 2;
    if (npad < 1 || npad > 3 || (nd != npad + 1 && nd != npad + 2)) {
        throw NotImplementedError("Padding size " + std::to_string(n) + " is not supported for " + std::to_string(nd) +
                                  "D input tensor.\nSupported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)");
    }
    if (mode == Mode::Circular) {
        // aten's _pad_circular checks the outermost padded dim first
        for (int64_t k = npad - 1; k >= 0; --k) {
            const int64_t size = input.size(nd - 1 - k);
            const int64_t lo = pad[static_cast<size_t>(2 * k)], hi = pad[static_cast<size_t>(2 * k + 1)];
            EMBER_CHECK(lo <= size && hi <= size, "Padding value causes wrapping around more than once.");
            EMBER_CHECK(size + lo + hi >= 0, "Negative padding value is resulting in an empty dimension");
        }
        // then, beyond aten's checks (where aten reads memory it has not written): nothing left
        // to wrap around when a negative pad crops the whole dim
        for (int64_t k = npad - 1; k >= 0; --k) {
            const int64_t size = input.size(nd - 1 - k);
            const int64_t lo = pad[static_cast<size_t>(2 * k)], hi = pad[static_cast<size_t>(2 * k + 1)];
            const int64_t kept = size - std::max<int64_t>(-lo, 0) - std::max<int64_t>(-hi, 0);
            EMBER_CHECK(kept > 0 || size + lo + hi == 0, "Padding value causes wrapping around more than once.");
        }
        return index_pad(input, pad, mode);
    }
    check_valid_input(input, npad);
    if (mode == Mode::Reflect) {
        for (int64_t k = 0; k < npad; ++k) {
            const int64_t d = nd - 1 - k, size = input.size(d);
            const int64_t lo = pad[static_cast<size_t>(2 * k)], hi = pad[static_cast<size_t>(2 * k + 1)];
            EMBER_CHECK(lo < size && hi < size, "Argument #", 4 + 2 * k, ": Padding size should be less than the "
                        "corresponding input dimension, but got: padding (", lo, ", ", hi, ") at dimension ", d,
                        " of input ", input.sizes());
        }
    }
    check_output_size(input, pad, mode);
    return index_pad(input, pad, mode);
}

}  // namespace

Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode, std::optional<double> value) {
    return pad_impl(input, pad, mode_from_string(mode), value);
}

Tensor pad(const Tensor& input, const PadFuncOptions& options) {
    // libtorch passes a value of 0 as "no value", so the other modes accept it
    std::optional<double> value;
    if (options.value() != 0.0) value = options.value();
    return pad_impl(input, options.pad(), mode_from_options(options.mode()), value);
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
