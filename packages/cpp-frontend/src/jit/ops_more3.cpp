// Issue 14's second batch of the C++ op table, part 2: reductions into tensors by index
// (scatter_reduce, index_reduce, masked_scatter, put, nonzero_static, unravel_index),
// spatial sampling (grid_sample and the grid_sampler family, affine_grid), unpooling and the
// other poolings (max_unpool1d/2d/3d, lp_pool1d/2d/3d, max_pool1d_with_indices,
// fractional_max_pool2d/3d) and order statistics and counts (quantile, nanquantile,
// nanmedian, bincount, histc, unique, unique_consecutive).
//
// The index-driven ops run over contiguous copies in the element type Python Ember's NumPy
// code uses (float32 stays float32, integers accumulate in int64 and wrap as NumPy's), so
// the results are Python's, rounding included; grid_sample computes its coordinates in the
// input's dtype for the same reason. The rest is composed from the library's ops.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <type_traits>

#include "core/dispatch.h"
#include "ember/error.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

Shape contiguous_strides(const Shape& s) {
    Shape st(s.size(), 1);
    for (int64_t k = static_cast<int64_t>(s.size()) - 2; k >= 0; --k) {
        st[static_cast<std::size_t>(k)] = st[static_cast<std::size_t>(k + 1)] * s[static_cast<std::size_t>(k + 1)];
    }
    return st;
}

int64_t prod(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<int64_t>()); }

Tensor long_tensor(const std::vector<int64_t>& v, Shape shape = {}) {
    if (shape.empty() && v.size() != 1) shape = {static_cast<int64_t>(v.size())};
    Tensor t = ember::empty(shape, kLong);
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    return t;
}

std::vector<int64_t> long_values(const Tensor& t) {
    Tensor c = t.to(kLong).contiguous();
    const int64_t* p = c.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + c.numel());
}

OpResult call_op(const std::string& name, std::vector<Value> args, Kwargs kwargs = {}) {
    return op_table().at(name).fn(args, kwargs);
}

// Calls f(multi_index) for every index of `shape` in row-major order.
template <typename F>
void for_each_index(const Shape& shape, F f) {
    const int64_t n = prod(shape);
    Shape m(shape.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
        f(m);
        for (int64_t k = static_cast<int64_t>(shape.size()) - 1; k >= 0; --k) {
            if (++m[static_cast<std::size_t>(k)] < shape[static_cast<std::size_t>(k)]) break;
            m[static_cast<std::size_t>(k)] = 0;
        }
    }
}

// ------------------------------------------------------------------------- scatter_reduce

// The element type NumPy reduces in: float32 / float64 as they are (float16 in float32),
// integers and bool widened to int64.
template <typename T>
using reduce_t = std::conditional_t<std::is_same_v<T, double>, double,
                                    std::conditional_t<std::is_floating_point_v<T> || std::is_same_v<T, Half>, float, int64_t>>;

template <typename A>
A reduce_identity(const std::string& reduce, bool is_bool) {
    if (reduce == "sum" || reduce == "mean") return A(0);
    if (reduce == "prod") return A(1);
    if constexpr (std::is_floating_point_v<A>) {
        return reduce == "amax" ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    } else {
        if (is_bool) return reduce == "amax" ? A(0) : A(1);
        return reduce == "amax" ? std::numeric_limits<A>::min() : std::numeric_limits<A>::max();
    }
}

template <typename A>
A combine(const std::string& reduce, A acc, A v) {
    if constexpr (std::is_integral_v<A>) {  // integers wrap, as NumPy's
        if (reduce == "sum" || reduce == "mean") return static_cast<A>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
        if (reduce == "prod") return static_cast<A>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
    }
    if (reduce == "sum" || reduce == "mean") return acc + v;
    if (reduce == "prod") return acc * v;
    if constexpr (std::is_floating_point_v<A>) {
        if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<A>::quiet_NaN();
    }
    return reduce == "amax" ? std::max(acc, v) : std::min(acc, v);
}

// out = input with src reduced into the positions `targets` (out offsets), `sources` (src
// offsets), in order.
Tensor reduce_into(const Tensor& input, const Tensor& src, const std::vector<int64_t>& targets,
                   const std::vector<int64_t>& sources, const std::string& reduce, bool include_self) {
    Tensor out = input.contiguous().clone();
    const Tensor s = src.contiguous();
    native::dispatch_all(input.scalar_type(), "scatter_reduce", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = reduce_t<T>;
        const bool is_bool = std::is_same_v<T, bool>;
        T* o = out.data_ptr<T>();
        const T* sp = s.data_ptr<T>();
        const int64_t n = out.numel();
        std::vector<A> acc(static_cast<std::size_t>(n));
        for (int64_t i = 0; i < n; ++i) acc[static_cast<std::size_t>(i)] = static_cast<A>(static_cast<double>(o[i]));
        if constexpr (!std::is_floating_point_v<A>) {
            for (int64_t i = 0; i < n; ++i) acc[static_cast<std::size_t>(i)] = static_cast<A>(o[i]);
        }
        std::vector<int64_t> counts(static_cast<std::size_t>(n), include_self ? 1 : 0);
        if (!include_self) {
            for (int64_t t : targets) acc[static_cast<std::size_t>(t)] = reduce_identity<A>(reduce, is_bool);
        }
        for (std::size_t k = 0; k < targets.size(); ++k) {
            A v;
            if constexpr (std::is_floating_point_v<A>) v = static_cast<A>(static_cast<double>(sp[sources[k]]));
            else v = static_cast<A>(sp[sources[k]]);
            const std::size_t t = static_cast<std::size_t>(targets[k]);
            acc[t] = combine<A>(reduce, acc[t], v);
            ++counts[t];
        }
        for (int64_t i = 0; i < n; ++i) {
            A r = acc[static_cast<std::size_t>(i)];
            if (reduce == "mean") {
                const int64_t c = std::max<int64_t>(counts[static_cast<std::size_t>(i)], 1);
                if constexpr (std::is_floating_point_v<A>) {
                    r = r / static_cast<A>(c);
                } else {
                    const int64_t q = r / c;
                    r = (r % c != 0 && ((r < 0) != (c < 0))) ? q - 1 : q;  // floor division
                }
            }
            if constexpr (std::is_same_v<T, bool>) o[i] = r != 0;
            else if constexpr (std::is_same_v<T, Half>) o[i] = Half(static_cast<float>(r));
            else o[i] = static_cast<T>(r);
        }
    });
    return out;
}

void check_index_dtype(const Tensor& index, const std::string& message) {
    if (index.scalar_type() != kLong && index.scalar_type() != kInt) throw Error(message);
}

Tensor scatter_reduce(const Tensor& input, int64_t dim_arg, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
    if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin") {
        throw Error("reduce argument must be either sum, prod, mean, amax or amin, got " + reduce);
    }
    check_index_dtype(index, "scatter(): Expected dtype int32/int64 for index");
    if (std::max<int64_t>(index.dim(), 1) != std::max<int64_t>(input.dim(), 1)) {
        throw Error("Index tensor must have the same number of dimensions as self tensor");
    }
    const int64_t dim = dim_index(dim_arg, input.dim(), "scatter_reduce");
    Shape ishape = index.dim() ? shape_of(index) : Shape{1};
    Shape shape = input.dim() ? shape_of(input) : Shape{1};
    if (src.scalar_type() != input.scalar_type()) throw Error("scatter_reduce(): Expected self.dtype to be equal to src.dtype");
    Shape sshape = src.dim() ? shape_of(src) : Shape{1};
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if ((static_cast<int64_t>(k) != dim && ishape[k] > shape[k]) || ishape[k] > sshape[k]) {
            throw Error("Expected index [" + join_dims(ishape) + "] to be no larger than self [" + join_dims(shape) +
                        "] apart from dimension " + std::to_string(dim) + " and to be no larger size than src [" +
                        join_dims(sshape) + "]");
        }
    }
    std::vector<int64_t> idx = long_values(index);
    for (int64_t v : idx) {
        if (v < 0 || v >= shape[static_cast<std::size_t>(dim)]) {
            throw Error("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
                        " with size " + std::to_string(shape[static_cast<std::size_t>(dim)]));
        }
    }
    if (input.dim() == 0) throw Error("scatter_reduce(): 0-dim tensors are not supported");
    const Shape ost = contiguous_strides(shape), sst = contiguous_strides(sshape);
    std::vector<int64_t> targets, sources;
    std::size_t i = 0;
    for_each_index(ishape, [&](const Shape& m) {
        int64_t t = 0, s = 0;
        for (std::size_t k = 0; k < m.size(); ++k) {
            t += (static_cast<int64_t>(k) == dim ? idx[i] : m[k]) * ost[k];
            s += m[k] * sst[k];
        }
        targets.push_back(t);
        sources.push_back(s);
        ++i;
    });
    return reduce_into(input, src, targets, sources, reduce, include_self);
}

Tensor index_reduce(const Tensor& input, int64_t dim_arg, const Tensor& index, const Tensor& source,
                    const std::string& reduce, bool include_self) {
    if (reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin") {
        throw Error("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got " + reduce + ".");
    }
    if (index.dim() > 1) {
        throw IndexError("index_reduce_(): Index is supposed to be a vector, but got dim: " + std::to_string(index.dim()) +
                         " with type: " + std::string(scalar_type_name(index.scalar_type())) + " and size: [" +
                         join_dims(shape_of(index)) + "]");
    }
    check_index_dtype(index, std::string("index_reduce_(): Expected dtype int32/int64 for index but got: ") +
                                 std::string(scalar_type_name(index.scalar_type())));
    if (source.scalar_type() != input.scalar_type()) {
        throw Error(std::string("index_reduce_(): self (") + std::string(scalar_type_name(input.scalar_type())) +
                    ") and source (" + std::string(scalar_type_name(source.scalar_type())) + ") must have the same scalar type");
    }
    const int64_t dim = dim_index(dim_arg, input.dim(), "index_reduce");
    const int64_t n = source.dim() ? source.size(dim) : 1;
    if (index.numel() != n) {
        throw Error("index_reduce_(): Number of indices (" + std::to_string(index.numel()) +
                    ") should be equal to source.size(dim): (" + std::to_string(n) + "), for dim: " + std::to_string(dim));
    }
    bool shape_ok = source.dim() == input.dim();
    for (int64_t k = 0; shape_ok && k < input.dim(); ++k) shape_ok = k == dim || source.size(k) == input.size(k);
    if (!shape_ok) {
        throw Error("source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = [" +
                    join_dims(shape_of(input)) + "] source.shape = [" + join_dims(shape_of(source)) + "]");
    }
    const int64_t size = input.dim() ? input.size(dim) : 1;
    std::vector<int64_t> idx = long_values(index);
    for (int64_t v : idx) {
        if (v < 0 || v >= size) throw IndexError("index out of range in self");
    }
    Shape shape = input.dim() ? shape_of(input) : Shape{1};
    Shape sshape = source.dim() ? shape_of(source) : Shape{1};
    const Shape ost = contiguous_strides(shape), sst = contiguous_strides(sshape);
    std::vector<int64_t> targets, sources;
    for_each_index(sshape, [&](const Shape& m) {
        int64_t t = 0, s = 0;
        for (std::size_t k = 0; k < m.size(); ++k) {
            t += (static_cast<int64_t>(k) == dim ? idx[static_cast<std::size_t>(m[k])] : m[k]) * ost[k];
            s += m[k] * sst[k];
        }
        targets.push_back(t);
        sources.push_back(s);
    });
    // NumPy's ufunc.at applies the slices in the index's order, element by element within each
    std::vector<std::size_t> order(targets.size());
    std::iota(order.begin(), order.end(), 0);
    const int64_t inner = dim < static_cast<int64_t>(sst.size()) ? sst[static_cast<std::size_t>(dim)] : 1;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        const int64_t kx = (sources[x] / inner) % sshape[static_cast<std::size_t>(dim)];
        const int64_t ky = (sources[y] / inner) % sshape[static_cast<std::size_t>(dim)];
        return kx < ky;
    });
    std::vector<int64_t> t2, s2;
    for (std::size_t k : order) {
        t2.push_back(targets[k]);
        s2.push_back(sources[k]);
    }
    Tensor out = reduce_into(input.dim() ? input : input.reshape({1}), source, t2, s2, reduce, include_self);
    return input.dim() ? out : out.reshape({});
}

// ------------------------------------------------------------------------- grid_sample

// The pixel position of normalized grid coordinates (PyTorch's GridSampler.h), in T.
template <typename T>
T unnormalize(T coord, int64_t size, bool align_corners) {
    const T s = static_cast<T>(size);
    if (align_corners) return (coord + T(1)) / T(2) * (s - T(1));
    return ((coord + T(1)) * s - T(1)) / T(2);
}

template <typename T>
T clip_coordinate(T x, int64_t size) {
    if (std::isnan(x)) return T(0);
    return std::min(static_cast<T>(size - 1), std::max(x, T(0)));
}

template <typename T>
T reflect_coordinate(T x, int64_t twice_low, int64_t twice_high) {
    if (twice_low == twice_high) return T(0);
    const T low = static_cast<T>(twice_low) / T(2);
    const T span = static_cast<T>(twice_high - twice_low) / T(2);
    const T shifted = x - low;
    const T dist = shifted < 0 ? shifted * T(-1) : shifted;
    const T flips = std::floor(dist / span);
    const T extra = dist - flips * span;
    const bool odd = std::fmod(flips, T(2)) == T(1);
    return (odd ? span - extra : extra) + low;
}

template <typename T>
T pad_coordinate(T x, int64_t size, int padding_mode, bool align_corners) {
    if (padding_mode == 1) return clip_coordinate(x, size);
    if (padding_mode == 2) {
        if (align_corners) return clip_coordinate(reflect_coordinate(x, 0, 2 * (size - 1)), size);
        return clip_coordinate(reflect_coordinate(x, -1, 2 * size - 1), size);
    }
    return x;
}

template <typename T>
struct Tap {
    T pos;
    T weight;
    bool weighted;
};

// One spatial dim's taps at one coordinate (Python Ember's _dim_taps).
template <typename T>
std::vector<Tap<T>> dim_taps(T coord, int64_t size, int mode, int padding_mode, bool align_corners) {
    if (mode == 2) {  // bicubic: the padding maps each tap
        const T x = unnormalize(coord, size, align_corners);
        const T lo = std::floor(x);
        const T t = x - lo;
        const T A = T(-0.75);
        auto near = [A](T s) { return ((A + T(2)) * s - (A + T(3))) * s * s + T(1); };
        auto far = [A](T s) { return ((A * s - T(5) * A) * s + T(8) * A) * s - T(4) * A; };
        const T w[4] = {far(t + T(1)), near(t), near(T(1) - t), far(T(2) - t)};
        std::vector<Tap<T>> taps;
        for (int j = 0; j < 4; ++j) {
            taps.push_back({pad_coordinate(lo + static_cast<T>(j - 1), size, padding_mode, align_corners), w[j], true});
        }
        return taps;
    }
    const T x = pad_coordinate(unnormalize(coord, size, align_corners), size, padding_mode, align_corners);
    if (mode == 1) return {{std::nearbyint(x), T(1), false}};
    const T lo = std::floor(x);
    const T frac = x - lo;
    return {{lo, T(1) - frac, true}, {lo + T(1), frac, true}};
}

const char* const kModes[] = {"bilinear", "nearest", "bicubic"};
const char* const kPaddingModes[] = {"zeros", "border", "reflection"};

Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t mode, int64_t padding_mode, bool align_corners,
                    int dims) {
    if (mode < 0 || mode > 2) throw Error("grid_sampler(): unknown interpolation mode " + std::to_string(mode));
    if (padding_mode < 0 || padding_mode > 2) throw Error("grid_sampler(): unknown padding mode " + std::to_string(padding_mode));
    const Shape ish = shape_of(input), gsh = shape_of(grid);
    const std::string sizes = "input with sizes [" + join_dims(ish) + "] and grid with sizes [" + join_dims(gsh) + "]";
    if (ish.empty() || gsh.empty() || ish[0] != gsh[0]) {
        throw Error("grid_sampler(): expected grid and input to have same batch size, but got " + sizes);
    }
    if (gsh.back() != static_cast<int64_t>(ish.size()) - 2) {
        throw Error("grid_sampler(): expected grid to have size " + std::to_string(ish.size() - 2) +
                    " in last dimension, but got grid with sizes [" + join_dims(gsh) + "]");
    }
    for (std::size_t i = 2; i < ish.size(); ++i) {
        if (ish[i] <= 0) {
            throw Error("grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes [" +
                        join_dims(ish) + "] with dimension " + std::to_string(i) + " being empty");
        }
    }
    if (static_cast<int>(ish.size()) != dims || static_cast<int>(gsh.size()) != dims) {
        throw Error("grid_sampler(): expected " + std::to_string(dims) + "D input and grid with same number of dimensions, but got " +
                    sizes);
    }
    if (dims == 5 && mode == 2) throw Error("grid_sampler(): bicubic interpolation only supports 4D input");
    if (!input.is_floating_point()) {
        throw NotImplementedError(std::string("\"") + (dims == 4 ? "grid_sampler_2d_cpu_kernel_impl" : "grid_sampler3d_cpu") +
                                  "\" not implemented for '" + std::string(scalar_type_name(input.scalar_type())) + "'");
    }
    if (grid.scalar_type() != input.scalar_type()) {
        throw Error(std::string("expected scalar type ") + std::string(scalar_type_name(input.scalar_type())) +
                    " but found " + std::string(scalar_type_name(grid.scalar_type())));
    }
    const int n = dims - 2;
    const int64_t N = ish[0], C = ish[1];
    const Shape spatial(ish.begin() + 2, ish.end());
    const Shape out_spatial(gsh.begin() + 1, gsh.end() - 1);
    const int64_t S = prod(spatial), Q = prod(out_spatial);
    Shape out_shape{N, C};
    out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
    const bool is_double = input.scalar_type() == kDouble;
    const ScalarType work = is_double ? kDouble : kFloat;
    const Tensor xin = input.to(work).contiguous(), gin = grid.to(work).contiguous();
    Tensor out = ember::zeros(out_shape, work);
    auto run = [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = xin.data_ptr<T>();
        const T* g = gin.data_ptr<T>();
        T* o = out.data_ptr<T>();
        const Shape pstride = contiguous_strides(spatial);
        for (int64_t b = 0; b < N; ++b) {
            for (int64_t q = 0; q < Q; ++q) {
                const T* point = g + (b * Q + q) * n;
                std::vector<std::vector<Tap<T>>> per_dim(static_cast<std::size_t>(n));
                for (int i = 0; i < n; ++i) {  // the grid's last axis lists x (width) first
                    per_dim[static_cast<std::size_t>(i)] =
                        dim_taps<T>(point[n - 1 - i], spatial[static_cast<std::size_t>(i)], static_cast<int>(mode),
                                    static_cast<int>(padding_mode), align_corners);
                }
                // every combination of the per-dim taps, the first dim's varying slowest
                std::vector<std::size_t> pick(static_cast<std::size_t>(n), 0);
                std::vector<T> acc(static_cast<std::size_t>(C), T(0));
                bool first = true;
                while (true) {
                    int64_t row = 0;
                    T weight = T(1);
                    bool any_weight = false;
                    bool valid_all = true;
                    for (int i = 0; i < n; ++i) {
                        const Tap<T>& tap = per_dim[static_cast<std::size_t>(i)][pick[static_cast<std::size_t>(i)]];
                        const int64_t size = spatial[static_cast<std::size_t>(i)];
                        const bool valid = tap.pos >= 0 && tap.pos <= static_cast<T>(size - 1);
                        const int64_t idx = valid ? static_cast<int64_t>(tap.pos) : 0;
                        const T w = tap.weighted ? tap.weight * T(valid ? 1 : 0) : T(valid ? 1 : 0);
                        weight = any_weight ? weight * w : w;
                        any_weight = true;
                        valid_all = valid_all && valid;
                        row += idx * pstride[static_cast<std::size_t>(i)];
                    }
                    for (int64_t c = 0; c < C; ++c) {
                        const T term = x[(b * C + c) * S + row] * weight;
                        acc[static_cast<std::size_t>(c)] = first ? term : acc[static_cast<std::size_t>(c)] + term;
                    }
                    first = false;
                    int i = n - 1;
                    for (; i >= 0; --i) {
                        if (++pick[static_cast<std::size_t>(i)] < per_dim[static_cast<std::size_t>(i)].size()) break;
                        pick[static_cast<std::size_t>(i)] = 0;
                    }
                    if (i < 0) break;
                }
                for (int64_t c = 0; c < C; ++c) o[(b * C + c) * Q + q] = acc[static_cast<std::size_t>(c)];
            }
        }
    };
    if (is_double) run(native::TypeTag<double>());
    else run(native::TypeTag<float>());
    return out.to(input.scalar_type());
}

bool align_corners_of(const Args& a) { return a.is_none("align_corners") ? false : a.boolean("align_corners"); }

Tensor affine_grid_generator(const Tensor& theta, const Shape& size, bool align_corners) {
    const Shape spatial(size.begin() + 2, size.end());
    const int64_t n = static_cast<int64_t>(spatial.size());
    const int64_t P = prod(spatial);
    // every output pixel's (x, y[, z], 1), x (the last dim) first
    Tensor base = ember::empty({P, n + 1}, kDouble);
    double* bp = base.data_ptr<double>();
    std::vector<std::vector<double>> axes;
    for (int64_t s : spatial) {
        std::vector<double> ax(static_cast<std::size_t>(std::max<int64_t>(s, 0)), 0.0);
        if (s > 1) {
            for (int64_t i = 0; i < s; ++i) {
                // NumPy's linspace(-1, 1, s): start + i * step, the last point exactly 1
                const double step = 2.0 / static_cast<double>(s - 1);
                ax[static_cast<std::size_t>(i)] = i == s - 1 ? 1.0 : -1.0 + static_cast<double>(i) * step;
            }
        }
        axes.push_back(ax);
    }
    const Shape st = contiguous_strides(spatial);
    for (int64_t p = 0; p < P; ++p) {
        for (int64_t k = 0; k < n; ++k) {
            const int64_t dim = n - 1 - k;  // column k is spatial dim n - 1 - k
            const int64_t i = (p / st[static_cast<std::size_t>(dim)]) % spatial[static_cast<std::size_t>(dim)];
            bp[p * (n + 1) + k] = axes[static_cast<std::size_t>(dim)][static_cast<std::size_t>(i)];
        }
        bp[p * (n + 1) + n] = 1.0;
    }
    Tensor b = base.to(theta.scalar_type());
    if (!align_corners) {
        // r * (steps - 1) / steps in the dtype, per column (the ones column stays 1)
        std::vector<Tensor> cols;
        for (int64_t k = 0; k < n; ++k) {
            const int64_t s = spatial[static_cast<std::size_t>(n - 1 - k)];
            Tensor c = b.select(1, k);
            cols.push_back(s > 1 ? c * static_cast<double>(s - 1) / static_cast<double>(s) : c);
        }
        cols.push_back(b.select(1, n));
        b = ember::stack(cols, 1);
    }
    Tensor expanded = b.expand({size[0], P, n + 1});
    Shape out{size[0]};
    out.insert(out.end(), spatial.begin(), spatial.end());
    out.push_back(n);
    return expanded.bmm(theta.transpose(1, 2)).reshape(out);
}

// ------------------------------------------------------------------------- pooling

Shape ntuple(const Args& a, const char* name, std::size_t n) {
    Shape v = a.ints(name, n);
    if (v.size() == 1 && n > 1) v = Shape(n, v[0]);
    return v;
}

Tensor max_unpool(const Args& a, int n) {
    Tensor x = a.tensor("input"), indices = a.tensor("indices");
    const Shape k = ntuple(a, "kernel_size", static_cast<std::size_t>(n));
    const Shape s = a.is_none("stride") ? k : ntuple(a, "stride", static_cast<std::size_t>(n));
    const Shape p = ntuple(a, "padding", static_cast<std::size_t>(n));
    if (x.sizes() != indices.sizes()) {
        throw Error("Expected shape of indices to be same as that of the input tensor (" + join_dims(shape_of(x), "x") +
                    ") but got indices tensor with shape: (" + join_dims(shape_of(indices), "x") + ")");
    }
    if (x.dim() < n) throw Error("max_unpool: input needs at least " + std::to_string(n) + " dimensions");
    Shape xs;
    if (a.is_none("output_size")) {
        for (int i = 0; i < n; ++i) {
            const std::size_t u = static_cast<std::size_t>(i);
            xs.push_back((x.size(x.dim() - n + i) - 1) * s[u] - 2 * p[u] + k[u]);
        }
    } else {
        Shape os = a.ints("output_size");
        if (static_cast<int>(os.size()) < n) throw Error("max_unpool: output_size needs " + std::to_string(n) + " values");
        xs.assign(os.end() - n, os.end());
    }
    const int64_t P = prod(xs);
    std::vector<int64_t> idx = long_values(indices);
    if (!idx.empty()) {
        const auto [lo, hi] = std::minmax_element(idx.begin(), idx.end());
        if (*lo < 0 || *hi >= P) {
            const int64_t bad = *hi >= P ? *hi : *lo;
            Shape shown = xs;
            if (n == 1) shown.push_back(1);
            throw Error("Found an invalid max index: " + std::to_string(bad) + " (output volumes are of size " +
                        join_dims(shown, "x") + ")");
        }
    }
    Shape lead(x.sizes().begin(), x.sizes().end() - n);
    const int64_t planes = prod(lead), per = prod(Shape(x.sizes().end() - n, x.sizes().end()));
    Shape out_shape = lead;
    out_shape.insert(out_shape.end(), xs.begin(), xs.end());
    Tensor flat_out = ember::zeros({planes * P}, x.scalar_type());
    Tensor pos = ember::empty({planes * per}, kLong);
    int64_t* pp = pos.data_ptr<int64_t>();
    for (int64_t i = 0; i < planes * per; ++i) pp[i] = (i / per) * P + idx[static_cast<std::size_t>(i)];
    Tensor values = x.reshape({-1});
    flat_out = flat_out.index_put({std::optional<Tensor>(pos)}, values, false);
    return flat_out.reshape(out_shape);
}

Tensor lp_pool(const Args& a, int n) {
    Tensor x = a.tensor("input");
    const double p = a.number("norm_type");
    const Shape k = ntuple(a, "kernel_size", static_cast<std::size_t>(n));
    const std::string avg = "avg_pool" + std::to_string(n) + "d";
    Kwargs kw{{"stride", a["stride"]}, {"padding", Value::integer(0)}, {"ceil_mode", a["ceil_mode"]},
              {"count_include_pad", Value::boolean(true)}};
    std::vector<Value> kv;
    for (int64_t v : k) kv.push_back(Value::integer(v));
    Tensor out = call_op(avg, {Value::of(ember::pow(x, p)), Value::list(kv)}, kw).at(0);
    return ember::pow(ember::sign(out) * ember::relu(ember::abs(out)) * static_cast<double>(prod(k)), 1.0 / p);
}

// PyTorch's generate_intervals in the input's dtype (fractional max pooling's window starts).
template <typename T>
std::vector<int64_t> fractional_starts(T sample, int64_t in_size, int64_t out_size, int64_t pool) {
    std::vector<int64_t> starts(static_cast<std::size_t>(out_size), in_size - pool);
    if (out_size > 1) {
        const T alpha = static_cast<T>(in_size - pool) / static_cast<T>(out_size - 1);
        for (int64_t i = 0; i + 1 < out_size; ++i) {
            starts[static_cast<std::size_t>(i)] = static_cast<int64_t>((static_cast<T>(i) + sample) * alpha) -
                                                  static_cast<int64_t>(sample * alpha);
        }
    }
    return starts;
}

OpResult fractional_max(const Args& a, int n, bool force_indices) {
    Tensor x = a.tensor("input");
    const std::string name = "fractional_max_pool" + std::to_string(n) + "d";
    const std::string prefix = n == 2 ? "fractional_max_pool2d()" : "fractional_max_pool3d_out()";
    if (a.is_none("output_size") && a.is_none("output_ratio")) {
        throw ValueError(name + " requires specifying either an output_size or an output_ratio");
    }
    auto int_tuple = [&](const Value& v, const char* what) {
        Shape vals = v.is_sequence() ? to_ints(v, name) : Shape{to_int(v, name)};
        if (vals.size() == 1) vals = Shape(static_cast<std::size_t>(n), vals[0]);
        if (static_cast<int>(vals.size()) != n) {
            throw Error(name + ": " + what + " must either be a single Int or " + (n == 2 ? "tuple of Ints" : "tuple of three Ints"));
        }
        return vals;
    };
    const Shape k = int_tuple(a["kernel_size"], "kernel_size");
    Shape ys;
    if (!a.is_none("output_size")) {
        ys = int_tuple(a["output_size"], "output_size");
    } else {
        const Value& r = a["output_ratio"];
        std::vector<double> ratio;
        if (r.is_sequence()) for (const Value& v : r.items) ratio.push_back(v.kind == Value::Kind::Float ? v.f : static_cast<double>(v.i));
        else ratio.push_back(a.number("output_ratio"));
        if (static_cast<int>(ratio.size()) > n) {
            throw ValueError(name + " requires output_ratio to either be a single Int or tuple of Ints.");
        }
        if (ratio.size() == 1) ratio = std::vector<double>(static_cast<std::size_t>(n), ratio[0]);
        for (int i = 0; i < n; ++i) {
            ys.push_back(static_cast<int64_t>(static_cast<double>(x.size(x.dim() - n + i)) * ratio[static_cast<std::size_t>(i)]));
        }
    }
    const Shape shape = shape_of(x);
    if (x.dim() != n + 1 && x.dim() != n + 2) {
        throw Error(prefix + ": Expected " + std::to_string(n + 1) + "D or " + std::to_string(n + 2) + "D tensor, but got: [" +
                    join_dims(shape) + "]");
    }
    for (std::size_t i = 1; i < shape.size(); ++i) {
        if (shape[i] <= 0) {
            throw Error(prefix + ": Expected input to have non-zero size for non-batch dimensions, but got[" + join_dims(shape) +
                        "] with dimension " + std::to_string(i) + " being empty.");
        }
    }
    const char* names2[] = {"height", "width"};
    const char* names3[] = {"time", "height", "width"};
    const Shape xs(shape.end() - n, shape.end());
    for (int i = 0; i < n; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        if (ys[u] + k[u] - 1 > xs[u] - (n == 3 ? 1 : 0)) {
            const std::string what = n == 2 ? names2[i] : names3[i];
            throw Error(prefix + ": pool " + what + " " + std::to_string(k[u]) + " too large relative to input " + what + " " +
                        std::to_string(xs[u]));
        }
    }
    const bool unbatched = x.dim() == n + 1;
    Tensor xb = unbatched ? x.unsqueeze(0) : x;
    const int64_t N = xb.size(0), C = xb.size(1);
    Tensor samples = a.optional_tensor("_random_samples");
    if (!samples.defined()) samples = ember::rand({N, C, n}, x.scalar_type());
    if (samples.scalar_type() != x.scalar_type()) throw Error("Expect _random_samples to have the same dtype as input");
    if (samples.dim() != 3) throw Error("Expect _random_samples to have 3 dimensions, got " + std::to_string(samples.dim()));
    if (samples.size(0) < N) throw Error("Expect _random_samples.size(0) no less then input batch size.");
    if (samples.size(1) != C) throw Error("Expect _random_samples.size(1) equals to input channel size.");
    if (samples.size(2) != n) {
        throw Error("Expect _random_samples.size(2) equals to " + std::to_string(n) + "; got " + std::to_string(samples.size(2)) + ".");
    }
    if (!x.is_floating_point()) {
        throw NotImplementedError("\"fractional_max_pool" + std::to_string(n) + "d_out_frame\" not implemented for '" +
                                  std::string(scalar_type_name(x.scalar_type())) + "'");
    }
    // which sample drives each spatial dim (PyTorch's kernels: W then H in 2-D; T, H, W in 3-D)
    const int sample_of[2][3] = {{1, 0, 0}, {0, 1, 2}};
    const int64_t Y = prod(ys), X = prod(xs);
    const Shape xst = contiguous_strides(xs), yst = contiguous_strides(ys);
    Tensor xd = xb.to(kDouble).contiguous();
    const double* xp = xd.data_ptr<double>();
    Tensor sd = samples.contiguous();
    Tensor out_idx = ember::empty({N, C, Y}, kLong);
    int64_t* oi = out_idx.data_ptr<int64_t>();
    for (int64_t b = 0; b < N; ++b) {
        for (int64_t c = 0; c < C; ++c) {
            std::vector<std::vector<int64_t>> starts;
            for (int i = 0; i < n; ++i) {
                const int64_t si = (b * C + c) * n + sample_of[n - 2][i];
                const std::size_t u = static_cast<std::size_t>(i);
                if (x.scalar_type() == kDouble) {
                    starts.push_back(fractional_starts<double>(sd.data_ptr<double>()[si], xs[u], ys[u], k[u]));
                } else {
                    const float s = x.scalar_type() == kFloat ? sd.data_ptr<float>()[si]
                                                              : sd.to(kFloat).contiguous().data_ptr<float>()[si];
                    starts.push_back(fractional_starts<float>(s, xs[u], ys[u], k[u]));
                }
            }
            const double* plane = xp + (b * C + c) * X;
            for (int64_t q = 0; q < Y; ++q) {
                int64_t origin = 0;
                for (int i = 0; i < n; ++i) {
                    const std::size_t u = static_cast<std::size_t>(i);
                    origin += starts[u][static_cast<std::size_t>((q / yst[u]) % ys[u])] * xst[u];
                }
                double best = -std::numeric_limits<double>::infinity();
                int64_t where = origin;
                for_each_index(k, [&](const Shape& off) {
                    int64_t pos = origin;
                    for (int i = 0; i < n; ++i) pos += off[static_cast<std::size_t>(i)] * xst[static_cast<std::size_t>(i)];
                    const double v = plane[pos];
                    if (v > best || std::isnan(v)) {  // the first maximum, or the last NaN
                        best = v;
                        where = pos;
                    }
                });
                oi[(b * C + c) * Y + q] = where;
            }
        }
    }
    Tensor values = xb.reshape({N, C, X}).gather(2, out_idx);
    Shape oshape{N, C};
    oshape.insert(oshape.end(), ys.begin(), ys.end());
    values = values.reshape(oshape);
    Tensor indices = out_idx.reshape(oshape);
    if (unbatched) {
        values = values.squeeze(0);
        indices = indices.squeeze(0);
    }
    if (force_indices || a.boolean("return_indices")) return {values, indices};
    return one(values);
}

// ------------------------------------------------------------------------- quantiles, counts

Tensor quantile(const Args& a, bool ignore_nan) {
    const std::string name = ignore_nan ? "nanquantile" : "quantile";
    Tensor x = a.tensor("input");
    if (x.scalar_type() != kFloat && x.scalar_type() != kDouble) {
        throw Error(name + "() input tensor must be either float or double dtype");
    }
    const std::string interpolation = a.string("interpolation");
    if (interpolation != "linear" && interpolation != "lower" && interpolation != "higher" && interpolation != "midpoint" &&
        interpolation != "nearest") {
        throw Error(name + "() interpolation must be one of linear, lower, higher, midpoint or nearest, but got " + interpolation);
    }
    const bool q_tensor = a["q"].is_tensor();
    Tensor q;
    if (q_tensor) {
        q = a.tensor("q");
        if (q.dim() > 1) throw Error(name + "() q must be a scalar or 1D tensor");
        if (q.scalar_type() != x.scalar_type()) throw Error(name + "() q tensor must be same dtype as the input tensor");
    } else {
        const double qv = a.number("q");
        if (!(qv >= 0 && qv <= 1)) throw Error(name + "() q must be in the range [0, 1] but got " + describe(a["q"]));
        q = ember::scalar_tensor(qv, x.scalar_type());
    }
    if (((q < 0) | (q > 1)).any().item<bool>()) throw Error(name + "() q values must be in the range [0, 1]");
    if (x.numel() == 0) throw Error(name + "() input tensor must be non-empty");
    const bool flat = a.is_none("dim") || x.dim() == 0;
    Tensor xf = flat ? x.reshape({-1}) : x;
    const int64_t axis = flat ? 0 : dim_index(a.integer("dim"), x.dim(), name);
    Tensor xs = std::get<0>(ember::sort(xf, axis)).unsqueeze(0);
    Tensor nans = ember::sum(ember::isnan(xf), {axis}, true).unsqueeze(0);  // int64 counts
    const int64_t n = xf.size(axis);
    Tensor valid = ignore_nan ? n - nans : ember::full(shape_of(nans), n, kLong);
    Tensor scale = ember::clamp_min(valid - 1, 0).to(x.scalar_type());
    const int64_t nq = q.numel();
    Shape q_col{nq};
    for (int64_t i = 0; i < xf.dim(); ++i) q_col.push_back(1);
    Tensor ranks = q.reshape(q_col) * scale;
    if (interpolation == "nearest") ranks = ember::round(ranks);
    Tensor lo = ember::floor(ranks).to(kLong);
    Tensor hi = interpolation == "lower" || interpolation == "nearest" ? lo : ember::ceil(ranks).to(kLong);
    if (interpolation == "higher") lo = hi;
    Shape picks_shape{nq};
    for (int64_t s : xf.sizes()) picks_shape.push_back(s);
    Tensor picks = xs.expand(picks_shape);
    Shape gather_shape = picks_shape;
    gather_shape[static_cast<std::size_t>(axis + 1)] = 1;
    Tensor r = picks.gather(axis + 1, lo.expand(gather_shape).contiguous());
    if (interpolation == "midpoint") {
        r = ember::lerp(r, picks.gather(axis + 1, hi.expand(gather_shape).contiguous()), Scalar(0.5));
    } else if (interpolation == "linear") {
        Tensor weight = (ranks - lo.to(x.scalar_type())).expand(gather_shape);
        r = ember::lerp(r, picks.gather(axis + 1, hi.expand(gather_shape).contiguous()), weight);
    }
    Tensor undefined = ignore_nan ? valid == 0 : nans > 0;
    if (undefined.any().item<bool>()) {
        r = ember::masked_fill(r, undefined.expand(shape_of(r)), std::numeric_limits<double>::quiet_NaN());
    }
    Shape shape;
    if (q.dim()) shape.push_back(nq);
    if (a.is_none("dim")) {
        if (a.boolean("keepdim")) for (int64_t i = 0; i < x.dim(); ++i) shape.push_back(1);
    } else {
        for (int64_t i = 0; i < x.dim(); ++i) {
            if (i != axis) shape.push_back(x.size(i));
            else if (a.boolean("keepdim")) shape.push_back(1);
        }
    }
    return r.reshape(shape);
}

// unique's rows: the slices along `dim` (each element when there is no dim) as doubles;
// rows compare lexicographically, NaN above every number and never equal (each is distinct).
struct Rows {
    std::vector<std::vector<double>> rows;
    int64_t dim = -1;  // -1: the flattened elements
};

Rows rows_of(const Tensor& x, std::optional<int64_t> dim) {
    Rows r;
    Tensor m;
    if (dim) {
        r.dim = dim_index(*dim, x.dim(), "unique");
        const int64_t n = x.size(r.dim);
        Shape perm{r.dim};
        for (int64_t k = 0; k < x.dim(); ++k) {
            if (k != r.dim) perm.push_back(k);
        }
        m = x.permute(perm).reshape({n, -1});
    } else {
        m = x.reshape({-1, 1});
    }
    Tensor d = m.to(kDouble).contiguous();
    const double* p = d.data_ptr<double>();
    const int64_t n = d.size(0), w = d.dim() > 1 ? d.size(1) : 1;
    for (int64_t i = 0; i < n; ++i) r.rows.emplace_back(p + i * w, p + (i + 1) * w);
    return r;
}

bool row_less(const std::vector<double>& a, const std::vector<double>& b) {
    for (std::size_t k = 0; k < a.size(); ++k) {
        const bool na = std::isnan(a[k]), nb = std::isnan(b[k]);
        if (na || nb) {
            if (na && nb) continue;
            return nb;  // NaN sorts last
        }
        if (a[k] != b[k]) return a[k] < b[k];
    }
    return false;
}

bool row_equal(const std::vector<double>& a, const std::vector<double>& b) {
    for (std::size_t k = 0; k < a.size(); ++k) {
        if (!(a[k] == b[k])) return false;  // NaN is never equal
    }
    return true;
}

// The picked rows of x (elements, or slices along dim), the inverse and the counts, as
// Python Ember returns them (one tensor, or a tuple with the asked-for extras).
OpResult unique_result(const Tensor& x, const Rows& r, const std::vector<int64_t>& picked, const std::vector<int64_t>& inverse,
                       const std::vector<int64_t>& counts, bool return_inverse, bool return_counts) {
    Tensor idx = long_tensor(picked, {static_cast<int64_t>(picked.size())});
    Tensor values = r.dim < 0 ? x.reshape({-1}).index_select(0, idx) : x.index_select(r.dim, idx);
    OpResult out{values};
    if (return_inverse) {
        Tensor inv = long_tensor(inverse, {static_cast<int64_t>(inverse.size())});
        out.push_back(r.dim < 0 ? inv.reshape(shape_of(x)) : inv);
    }
    if (return_counts) out.push_back(long_tensor(counts, {static_cast<int64_t>(counts.size())}));
    return out;
}

OpResult unique(const Tensor& x, std::optional<int64_t> dim, bool return_inverse, bool return_counts) {
    Rows r = rows_of(x, dim);
    const std::size_t n = r.rows.size();
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        return row_less(r.rows[static_cast<std::size_t>(i)], r.rows[static_cast<std::size_t>(j)]);
    });
    std::vector<int64_t> picked, inverse(n), counts;
    for (std::size_t k = 0; k < n; ++k) {
        const int64_t i = order[k];
        if (k == 0 || !row_equal(r.rows[static_cast<std::size_t>(order[k - 1])], r.rows[static_cast<std::size_t>(i)])) {
            picked.push_back(i);
            counts.push_back(0);
        }
        ++counts.back();
        inverse[static_cast<std::size_t>(i)] = static_cast<int64_t>(picked.size()) - 1;
    }
    return unique_result(x, r, picked, inverse, counts, return_inverse, return_counts);
}

OpResult unique_consecutive(const Tensor& x, std::optional<int64_t> dim, bool return_inverse, bool return_counts) {
    Rows r = rows_of(x, dim);
    std::vector<int64_t> picked, inverse, counts;
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
        if (i == 0 || !row_equal(r.rows[i - 1], r.rows[i])) {
            picked.push_back(static_cast<int64_t>(i));
            counts.push_back(0);
        }
        ++counts.back();
        inverse.push_back(static_cast<int64_t>(picked.size()) - 1);
    }
    return unique_result(x, r, picked, inverse, counts, return_inverse, return_counts);
}

}  // namespace

void register_more3_ops(OpTable& t) {
    // ---- reductions into tensors by index
    def(t, "scatter_reduce", "input, dim, index, src, reduce, *, include_self=True", [](const Args& a) {
        return one(scatter_reduce(a.tensor("input"), a.integer("dim"), a.tensor("index"), a.tensor("src"), a.string("reduce"),
                                  a.boolean("include_self")));
    });
    def_inplace_by_copy(t, "scatter_reduce");
    def(t, "index_reduce", "input, dim, index, source, reduce, *, include_self=True", [](const Args& a) {
        return one(index_reduce(a.tensor("input"), a.integer("dim"), a.tensor("index"), a.tensor("source"), a.string("reduce"),
                                a.boolean("include_self")));
    });
    def_inplace_by_copy(t, "index_reduce");
    auto masked_scatter = [](const Tensor& input, const Tensor& mask, const Tensor& source, bool inplace) {
        if (mask.scalar_type() != kBool) {
            throw Error(std::string("masked_scatter_ only supports boolean masks, but got mask with dtype ") +
                        std::string(dtype_name(mask.scalar_type())));
        }
        if (source.scalar_type() != input.scalar_type()) {
            throw Error(std::string("masked_scatter: expected self and source to have same dtypes but got") +
                        std::string(scalar_type_name(input.scalar_type())) + " and " +
                        std::string(scalar_type_name(source.scalar_type())));
        }
        const Shape bshape = ember::infer_size(input.sizes(), mask.sizes());
        if (inplace && bshape != shape_of(input)) {
            throw Error("output with shape [" + join_dims(shape_of(input)) + "] doesn't match the broadcast shape [" +
                        join_dims(bshape) + "]");
        }
        Tensor m = mask.expand(bshape);
        const int64_t count = ember::sum(m).item<int64_t>();
        if (source.numel() < count) throw Error("Number of elements of source < number of ones in mask");
        Tensor out = input.expand(bshape).contiguous().clone();
        Tensor values = source.reshape({-1}).narrow(0, 0, count);
        return out.index_put({std::optional<Tensor>(m.contiguous())}, values, false);
    };
    def(t, "masked_scatter", "input, mask, source", [masked_scatter](const Args& a) {
        return one(masked_scatter(a.tensor("input"), a.tensor("mask"), a.tensor("source"), false));
    });
    def(t, "masked_scatter_", "input, mask, source", [masked_scatter](const Args& a) {
        Tensor x = a.tensor("input");
        return one(write_into(x, masked_scatter(x, a.tensor("mask"), a.tensor("source"), true), "masked_scatter_"));
    });
    auto put = [](const Tensor& input, const Tensor& index, const Tensor& source, bool accumulate) {
        if (source.numel() != index.numel()) {
            throw IndexError("put_(): Expected source and index to have the same number of elements, but got source.numel() = " +
                             std::to_string(source.numel()) + ", index.numel() = " + std::to_string(index.numel()));
        }
        if (source.scalar_type() != input.scalar_type()) {
            throw Error(std::string("put_(): self and source expected to have the same dtype, but got self.dtype = ") +
                        std::string(scalar_type_name(input.scalar_type())) + " and source.dtype = " +
                        std::string(scalar_type_name(source.scalar_type())));
        }
        if (is_floating_point(index.scalar_type()) || index.scalar_type() == kBool) {
            throw Error(std::string("put_(): Expected a long tensor for index, but got ") +
                        std::string(scalar_type_name(index.scalar_type())));
        }
        const int64_t n = input.numel();
        std::vector<int64_t> idx = long_values(index);
        for (int64_t& v : idx) {
            if (v < -n || v >= n) {
                throw IndexError("out of range: tried to access index " + std::to_string(v) + " on a tensor of " +
                                 std::to_string(n) + " elements.");
            }
            if (v < 0) v += n;
        }
        Tensor flat = input.contiguous().clone().reshape({-1});
        Tensor values = source.reshape({-1});
        if (accumulate) {
            flat = flat.index_put({std::optional<Tensor>(long_tensor(idx, {static_cast<int64_t>(idx.size())}))}, values, true);
        } else {
            for (std::size_t k = 0; k < idx.size(); ++k) {  // in order: the last write wins
                flat.narrow(0, idx[k], 1).copy_(values.narrow(0, static_cast<int64_t>(k), 1));
            }
        }
        return flat.reshape(shape_of(input));
    };
    def(t, "put", "input, index, source, accumulate=False", [put](const Args& a) {
        return one(put(a.tensor("input"), a.tensor("index"), a.tensor("source"), a.boolean("accumulate")));
    });
    def(t, "put_", "input, index, source, accumulate=False", [put](const Args& a) {
        Tensor x = a.tensor("input");
        return one(write_into(x, put(x, a.tensor("index"), a.tensor("source"), a.boolean("accumulate")), "put_"));
    });
    def(t, "nonzero_static", "input, *, size, fill_value=-1", [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t size = a.integer("size");
        if (size < 0) throw Error("nonzero_static: 'size' must be an non-negative integer");
        const int64_t fill = a.integer("fill_value");
        if (x.dim() == 0) return one(ember::full({size, 0}, fill, kLong));
        Tensor found = ember::nonzero(x);
        const int64_t n = found.size(0);
        if (n >= size) return one(found.narrow(0, 0, size).contiguous());
        return one(ember::cat({found, ember::full({size - n, x.dim()}, fill, kLong)}, 0));
    });
    def(t, "unravel_index", "indices, shape", [](const Args& a) -> OpResult {
        Tensor indices = a.tensor("indices");
        if (!is_integral(indices.scalar_type(), false)) {
            throw TypeError(std::string("expected 'indices' to be integer dtype, but got ember.") +
                            std::string(dtype_name(indices.scalar_type())));
        }
        const Value& sv = a["shape"];
        Shape shape = sv.is_sequence() ? to_ints(sv, "unravel_index(): shape") : Shape{to_int(sv, "unravel_index(): shape")};
        for (int64_t s : shape) {
            if (s < 0) {
                throw ValueError("'shape' cannot have negative values, but got (" + join_dims(shape) +
                                 (shape.size() == 1 ? ",)" : ")"));
            }
        }
        if (std::count(shape.begin(), shape.end(), 0) && indices.numel()) throw Error("ZeroDivisionError");
        Tensor x = indices.to(kLong);
        const Shape st = contiguous_strides(shape);
        OpResult out;
        for (std::size_t k = 0; k < shape.size(); ++k) {
            out.push_back(ember::remainder(ember::floor_divide(x, Scalar(st[k])), Scalar(shape[k])));
        }
        return out;
    });

    // ---- spatial sampling
    const char* sampler_signature = "input, grid, interpolation_mode, padding_mode, align_corners";
    def(t, "grid_sampler", sampler_signature, [](const Args& a) {
        Tensor x = a.tensor("input");
        return one(grid_sampler(x, a.tensor("grid"), a.integer("interpolation_mode"), a.integer("padding_mode"),
                                a.boolean("align_corners"), x.dim() == 4 ? 4 : 5));
    });
    def(t, "grid_sampler_2d", sampler_signature, [](const Args& a) {
        return one(grid_sampler(a.tensor("input"), a.tensor("grid"), a.integer("interpolation_mode"), a.integer("padding_mode"),
                                a.boolean("align_corners"), 4));
    });
    def(t, "grid_sampler_3d", sampler_signature, [](const Args& a) {
        return one(grid_sampler(a.tensor("input"), a.tensor("grid"), a.integer("interpolation_mode"), a.integer("padding_mode"),
                                a.boolean("align_corners"), 5));
    });
    for (const char* name : {"grid_sample", "nn.functional.grid_sample"}) {
        def(t, name, "input, grid, mode='bilinear', padding_mode='zeros', align_corners=None", [](const Args& a) {
            const std::string mode = a.string("mode"), padding = a.string("padding_mode");
            const auto m = std::find(std::begin(kModes), std::end(kModes), mode) - std::begin(kModes);
            if (m == 3) {
                throw ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '" +
                                 mode + "'");
            }
            const auto p = std::find(std::begin(kPaddingModes), std::end(kPaddingModes), padding) - std::begin(kPaddingModes);
            if (p == 3) {
                throw ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
                                 "but got: '" + padding + "'");
            }
            Tensor x = a.tensor("input");
            return one(grid_sampler(x, a.tensor("grid"), m, p, align_corners_of(a), x.dim() == 4 ? 4 : 5));
        });
    }
    def(t, "affine_grid_generator", "theta, size, align_corners", [](const Args& a) {
        return one(affine_grid_generator(a.tensor("theta"), a.ints("size"), a.boolean("align_corners")));
    });
    for (const char* name : {"affine_grid", "nn.functional.affine_grid"}) {
        def(t, name, "theta, size, align_corners=None", [](const Args& a) {
            Tensor theta = a.tensor("theta");
            const bool align_corners = align_corners_of(a);
            if (!theta.is_floating_point()) {
                throw ValueError(std::string("Expected theta to have floating point type, but got ember.") +
                                 std::string(dtype_name(theta.scalar_type())));
            }
            const Shape size = a.ints("size");
            if (size.size() != 4 && size.size() != 5) {
                throw NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                          "respectively. Got size (" + join_dims(size) + ").");
            }
            const int64_t rows = static_cast<int64_t>(size.size()) - 2;
            if (theta.dim() != 3 || theta.size(1) != rows || theta.size(2) != rows + 1) {
                throw ValueError(std::string("Expected a batch of ") + (rows == 2 ? "2D" : "3D") + " affine matrices of shape Nx" +
                                 std::to_string(rows) + "x" + std::to_string(rows + 1) + " for size (" + join_dims(size) +
                                 "). Got ember.Size([" + join_dims(shape_of(theta)) + "]).");
            }
            const int64_t smallest = *std::min_element(size.begin() + 2, size.end());
            if (!(align_corners && smallest == 1) && *std::min_element(size.begin(), size.end()) <= 0) {
                throw ValueError("Expected non-zero, positive output size. Got (" + join_dims(size) + ")");
            }
            return one(affine_grid_generator(theta, size, align_corners));
        });
    }

    // ---- unpooling and the other poolings
    for (int n = 1; n <= 3; ++n) {
        const std::string d = std::to_string(n) + "d";
        for (const std::string& name : {"max_unpool" + d, "nn.functional.max_unpool" + d}) {
            def(t, name, "input, indices, kernel_size, stride=None, padding=0, output_size=None",
                [n](const Args& a) { return one(max_unpool(a, n)); });
        }
        for (const std::string& name : {"lp_pool" + d, "nn.functional.lp_pool" + d}) {
            def(t, name, "input, norm_type, kernel_size, stride=None, ceil_mode=False",
                [n](const Args& a) { return one(lp_pool(a, n)); });
        }
    }
    for (const char* name : {"max_pool1d_with_indices", "nn.functional.max_pool1d_with_indices"}) {
        def(t, name, "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
            [](const Args& a) {
                Kwargs kw{{"stride", a["stride"]}, {"padding", a["padding"]}, {"dilation", a["dilation"]},
                          {"ceil_mode", a["ceil_mode"]}, {"return_indices", Value::boolean(true)}};
                return call_op("max_pool1d", {a["input"], a["kernel_size"]}, kw);
            });
    }
    const char* fractional_signature = "input, kernel_size, output_size=None, output_ratio=None, return_indices=False, "
                                       "_random_samples=None";
    for (int n = 2; n <= 3; ++n) {
        const std::string base = "fractional_max_pool" + std::to_string(n) + "d";
        for (const std::string& prefix : {std::string(), std::string("nn.functional.")}) {
            def(t, prefix + base, fractional_signature, [n](const Args& a) { return fractional_max(a, n, false); });
            def(t, prefix + base + "_with_indices", fractional_signature, [n](const Args& a) { return fractional_max(a, n, true); });
        }
    }

    // ---- quantiles and counts
    def(t, "quantile", "input, q, dim=None, keepdim=False, *, interpolation='linear'", [](const Args& a) {
        return one(quantile(a, false));
    });
    def(t, "nanquantile", "input, q, dim=None, keepdim=False, *, interpolation='linear'", [](const Args& a) {
        return one(quantile(a, true));
    });
    def(t, "nanmedian", "input, dim=None, keepdim=False", [](const Args& a) -> OpResult {
        Tensor x = a.tensor("input");
        if (x.scalar_type() == kBool) {
            throw NotImplementedError(std::string("\"") + (a.is_none("dim") ? "median_cpu" : "median_out") +
                                      "\" not implemented for 'Bool'");
        }
        if (a.is_none("dim")) return {ember::nanmedian(x)};
        const int64_t d = dim_index(a.integer("dim"), x.dim(), "nanmedian");
        // PyTorch's std::nth_element (an all-NaN row's index is where it leaves the first of n
        // equal elements): ember::nanmedian
        auto [values, indices] = ember::nanmedian(x, d, a.boolean("keepdim"));
        return {values, indices};
    });
    def(t, "bincount", "input, weights=None, minlength=0", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (!is_integral(x.scalar_type(), false)) {
            throw NotImplementedError(std::string("\"bincount_cpu\" not implemented for '") +
                                      std::string(scalar_type_name(x.scalar_type())) + "'");
        }
        const int64_t minlength = a.integer("minlength");
        if (minlength < 0) throw Error("minlength should be >= 0");
        std::vector<int64_t> v = long_values(x);
        if (x.dim() != 1 || (!v.empty() && *std::min_element(v.begin(), v.end()) < 0)) {
            throw Error("bincount only supports 1-d non-negative integral inputs.");
        }
        Tensor w = a.optional_tensor("weights");
        ScalarType out = kLong;
        if (w.defined()) {
            if (w.dim() != 1 || w.size(0) != x.size(0)) throw Error("weights should be 1-d and have the same length as input");
            out = w.scalar_type() == kFloat ? kFloat : kDouble;
        }
        const int64_t bins = std::max<int64_t>(v.empty() ? 0 : *std::max_element(v.begin(), v.end()) + 1, minlength);
        Tensor r = ember::zeros({bins}, kDouble);
        double* rp = r.data_ptr<double>();
        Tensor wd = w.defined() ? w.to(kDouble).contiguous() : Tensor();
        for (std::size_t i = 0; i < v.size(); ++i) rp[v[i]] += wd.defined() ? wd.data_ptr<double>()[i] : 1.0;
        return one(r.to(out));
    });
    def(t, "histc", "input, bins=100, min=0, max=0", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (!x.is_floating_point()) {
            throw NotImplementedError(std::string("\"histogram_cpu\" not implemented for '") +
                                      std::string(scalar_type_name(x.scalar_type())) + "'");
        }
        const int64_t bins = a.integer("bins");
        if (bins <= 0) throw Error("torch.histogram(): bins must be > 0, but got " + std::to_string(bins) + " for dimension 0");
        double lo = a.number("min"), hi = a.number("max");
        if (lo == hi && x.numel()) {
            lo = ember::min(x).item<double>();
            hi = ember::max(x).item<double>();
        }
        if (lo == hi) {
            lo -= 1;
            hi += 1;
        }
        if (!std::isfinite(lo) || !std::isfinite(hi)) {
            std::ostringstream os;
            os << "torch.histc: range of [" << lo << ", " << hi << "] is not finite";
            throw Error(os.str());
        }
        if (lo > hi) throw Error("torch.histc: max must be larger than min");
        Tensor r = ember::zeros({bins}, kDouble);
        double* rp = r.data_ptr<double>();
        auto count = [&](auto tag) {
            using T = typename decltype(tag)::type;
            Tensor c = x.to(x.scalar_type() == kDouble ? kDouble : kFloat).contiguous();
            const T* p = c.data_ptr<T>();
            const T tlo = static_cast<T>(lo), span = static_cast<T>(hi - lo), nb = static_cast<T>(bins);
            for (int64_t i = 0; i < c.numel(); ++i) {
                const T v = p[i];
                if (!(v >= static_cast<T>(lo) && v <= static_cast<T>(hi))) continue;
                int64_t pos = static_cast<int64_t>((v - tlo) / span * nb);
                pos = std::min(pos, bins - 1);
                rp[pos] += 1;
            }
        };
        if (x.scalar_type() == kDouble) count(native::TypeTag<double>());
        else count(native::TypeTag<float>());
        return one(r.to(x.scalar_type()));
    });
    def(t, "unique", "input, sorted=True, return_inverse=False, return_counts=False, dim=None", [](const Args& a) {
        return unique(a.tensor("input"), a.optional_integer("dim"), a.boolean("return_inverse"), a.boolean("return_counts"));
    });
    def(t, "unique_consecutive", "input, return_inverse=False, return_counts=False, dim=None", [](const Args& a) {
        return unique_consecutive(a.tensor("input"), a.optional_integer("dim"), a.boolean("return_inverse"),
                                  a.boolean("return_counts"));
    });
}

}  // namespace ember::jit::detail
