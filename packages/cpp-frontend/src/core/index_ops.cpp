// Indexing: index/index_put_ (Python-style and aten-style), index_select, gather, scatter,
// scatter_add, index_add, masked_select, nonzero, one_hot, and their gradients.
#include <cstring>
#include <sstream>

#include "ember/indexing.h"
#include "op_common.h"

namespace ember {

using namespace native;

namespace {

void check_index_dtype(const Tensor& t) {
    const ScalarType s = t.scalar_type();
    EMBER_CHECK_INDEX(s == kLong || s == kInt || s == kByte || s == kBool,
                      "tensors used as indices must be long, int, byte or bool tensors");
}

[[noreturn]] void out_of_bounds(int64_t idx, int64_t dim, int64_t size) {
    throw IndexError(detail::str_cat("index ", idx, " is out of bounds for dimension ", dim, " with size ", size));
}

// The geometry of an advanced indexing operation on `self`.
struct IndexPlan {
    std::vector<int64_t> out_shape;
    Tensor src_view;  // self (its storage) viewed with out_shape: stride 0 on the index dims
    Tensor offsets;   // int64 element offsets, viewed with out_shape (stride 0 on the other dims)
};

// Replaces bool/byte masks by the long index tensors of their true elements.
std::vector<std::optional<Tensor>> expand_masks(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
    std::vector<std::optional<Tensor>> out;
    int64_t d = 0;
    for (const auto& idx : indices) {
        if (!idx || !idx->defined()) {
            out.emplace_back(std::nullopt);
            ++d;
            continue;
        }
        check_index_dtype(*idx);
        if (idx->scalar_type() == kBool || idx->scalar_type() == kByte) {
            const Tensor& mask = *idx;
            for (int64_t j = 0; j < mask.dim(); ++j) {
                EMBER_CHECK_INDEX(d + j < self.dim() && mask.size(j) == self.size(d + j), "The shape of the mask ",
                                  mask.sizes(), " at index ", j, " does not match the shape of the indexed tensor ",
                                  self.sizes(), " at index ", d + j);
            }
            Tensor nz = nonzero(mask);
            for (int64_t j = 0; j < mask.dim(); ++j) out.emplace_back(nz.select(1, j));
            d += mask.dim();
        } else {
            out.emplace_back(*idx);
            ++d;
        }
    }
    EMBER_CHECK_INDEX(static_cast<int64_t>(out.size()) <= self.dim(), "too many indices for tensor of dimension ",
                      self.dim(), " (got ", out.size(), ")");
    return out;
}

IndexPlan make_plan(const Tensor& self, const std::vector<std::optional<Tensor>>& idx_in) {
    NoGradGuard guard;
    std::vector<std::optional<Tensor>> idx = idx_in;
    while (static_cast<int64_t>(idx.size()) < self.dim()) idx.emplace_back(std::nullopt);
    std::vector<int64_t> dims;  // indexed dims of self
    std::vector<Tensor> tensors;
    for (size_t i = 0; i < idx.size(); ++i) {
        if (idx[i]) {
            dims.push_back(static_cast<int64_t>(i));
            tensors.push_back(cast(*idx[i], kLong));
        }
    }
    std::vector<int64_t> bshape;
    for (const Tensor& t : tensors) bshape = infer_size(bshape, t.sizes());
    bool adjacent = true;
    for (size_t i = 1; i < dims.size(); ++i) adjacent = adjacent && dims[i] == dims[i - 1] + 1;

    // offsets over the broadcast shape
    Tensor off = zeros(bshape, kLong);
    int64_t* op = static_cast<int64_t*>(off.data_ptr());
    const int64_t nb = off.numel();
    for (size_t k = 0; k < tensors.size(); ++k) {
        const Tensor e = contiguous_data(tensors[k].expand(bshape));
        const int64_t* ip = static_cast<const int64_t*>(e.data_ptr());
        const int64_t size = self.size(dims[k]), stride = self.stride(dims[k]);
        for (int64_t i = 0; i < nb; ++i) {
            int64_t v = ip[i];
            if (v < -size || v >= size) out_of_bounds(v, dims[k], size);
            if (v < 0) v += size;
            op[i] += v * stride;
        }
    }

    // output dims: (before, B, after) when adjacent, else (B, rest)
    std::vector<int64_t> rest;
    for (int64_t d = 0; d < self.dim(); ++d) {
        if (std::find(dims.begin(), dims.end(), d) == dims.end()) rest.push_back(d);
    }
    const int64_t insert_at = adjacent && !dims.empty() ? dims.front() : 0;
    IndexPlan plan;
    std::vector<int64_t> src_strides, off_strides;
    const std::vector<int64_t> bstr = contiguous_strides(bshape);
    size_t r = 0;
    auto push_rest = [&](int64_t d) {
        plan.out_shape.push_back(self.size(d));
        src_strides.push_back(self.stride(d));
        off_strides.push_back(0);
    };
    for (; r < rest.size() && rest[r] < insert_at; ++r) push_rest(rest[r]);
    for (size_t i = 0; i < bshape.size(); ++i) {
        plan.out_shape.push_back(bshape[i]);
        src_strides.push_back(0);
        off_strides.push_back(bshape[i] == 1 ? 0 : bstr[i]);
    }
    for (; r < rest.size(); ++r) push_rest(rest[r]);
    plan.src_view = make_tensor(self.storage(), self.scalar_type(), plan.out_shape, src_strides, self.storage_offset());
    plan.offsets = make_tensor(off.storage(), kLong, plan.out_shape, off_strides, 0);
    return plan;
}

// out[i] = src[i + off[i]] (gather) or dst[i + off[i]] = / += src[i] (scatter)
enum class IndexMode { Gather, Put, Accumulate };

void index_loop(const Tensor& a, const Tensor& b, const Tensor& offsets, IndexMode mode, int64_t offset_scale = 1) {
    if (a.numel() == 0) return;
    TensorIter iter = TensorIter::nullary({a, b, offsets});
    const int64_t es = a.element_size();
    dispatch_all(a.scalar_type(), "index", [&](auto tag) {
        using T = typename decltype(tag)::type;
        iter.for_each([&](char** d, const int64_t* s, int64_t n) {
            for (int64_t i = 0; i < n; ++i) {
                const int64_t off = *reinterpret_cast<const int64_t*>(d[2] + i * s[2]) * offset_scale * es;
                if (mode == IndexMode::Gather) {
                    *reinterpret_cast<T*>(d[0] + i * s[0]) = *reinterpret_cast<const T*>(d[1] + i * s[1] + off);
                } else {
                    T& dst = *reinterpret_cast<T*>(d[0] + i * s[0] + off);
                    const T v = *reinterpret_cast<const T*>(d[1] + i * s[1]);
                    if (mode == IndexMode::Put) {
                        dst = v;
                    } else if constexpr (std::is_same_v<T, bool>) {
                        dst = dst || v;
                    } else {
                        dst = static_cast<T>(static_cast<opmath_t<T>>(dst) + static_cast<opmath_t<T>>(v));
                    }
                }
            }
        });
    });
}

Tensor index_kernel(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
    IndexPlan plan = make_plan(self, indices);
    Tensor out = empty_tensor(plan.out_shape, self.scalar_type());
    index_loop(out, plan.src_view, plan.offsets, IndexMode::Gather);
    return out;
}

void index_put_kernel(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                      bool accumulate) {
    IndexPlan plan = make_plan(self, indices);
    bool expandable = values.dim() <= static_cast<int64_t>(plan.out_shape.size());
    for (int64_t i = 0; expandable && i < values.dim(); ++i) {
        const int64_t want = plan.out_shape[plan.out_shape.size() - static_cast<size_t>(values.dim() - i)];
        expandable = values.size(i) == want || values.size(i) == 1;
    }
    EMBER_CHECK(expandable, "shape mismatch: value tensor of shape ", values.sizes(),
                " cannot be broadcast to indexing result of shape ", IntArrayRef(plan.out_shape));
    Tensor v;
    {
        NoGradGuard g;
        v = cast(values, self.scalar_type()).expand(plan.out_shape);
    }
    // the destination: self's storage with the plan's geometry (offsets added per element)
    index_loop(plan.src_view, v, plan.offsets, accumulate ? IndexMode::Accumulate : IndexMode::Put);
}

std::vector<std::optional<Tensor>> detach_indices(const std::vector<std::optional<Tensor>>& idx) {
    std::vector<std::optional<Tensor>> out;
    for (const auto& t : idx) out.emplace_back(t ? std::optional<Tensor>(t->detach()) : std::nullopt);
    return out;
}

// gather/scatter geometry: `base` viewed with `shape` and stride 0 on dim d
Tensor restride(const Tensor& base, IntArrayRef shape, int64_t d) {
    std::vector<int64_t> strides;
    for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
        strides.push_back(i == d ? 0 : base.stride(i));
    }
    return make_tensor(base.storage(), base.scalar_type(), shape.vec(), strides, base.storage_offset());
}

void check_gather_shapes(const Tensor& self, int64_t d, const Tensor& index, const char* what, const Tensor* src) {
    EMBER_CHECK(index.scalar_type() == kLong, what, "(): Expected dtype int64 for index");
    EMBER_CHECK(index.dim() == self.dim() || (index.dim() <= 1 && self.dim() <= 1),
                "Index tensor must have the same number of dimensions as ", src ? "self tensor" : "input tensor");
    for (int64_t i = 0; i < index.dim(); ++i) {
        if (i != d) {
            EMBER_CHECK(index.size(i) <= self.size(i), "Size does not match at dimension ", i, " expected index ",
                        index.sizes(), " to be smaller than self ", self.sizes(), " apart from dimension ", d);
        }
        if (src) {
            EMBER_CHECK(index.size(i) <= src->size(i), "Size does not match at dimension ", i, " expected index ",
                        index.sizes(), " to be smaller than src ", src->sizes());
        }
    }
}

// element offsets (index * stride of self along d), bounds-checked
Tensor dim_offsets(const Tensor& index, int64_t size, int64_t d) {
    Tensor idx = contiguous_data(index);
    Tensor off = empty_tensor(index.sizes(), kLong);
    const int64_t* ip = static_cast<const int64_t*>(idx.data_ptr());
    int64_t* op = static_cast<int64_t*>(off.data_ptr());
    for (int64_t i = 0; i < idx.numel(); ++i) {
        int64_t v = ip[i];
        if (v < -size || v >= size) out_of_bounds(v, d, size);
        op[i] = v < 0 ? v + size : v;
    }
    return off;
}

void scatter_kernel(const Tensor& out, int64_t d, const Tensor& index, const Tensor& src, bool accumulate) {
    if (index.numel() == 0) return;
    const Tensor off = dim_offsets(index, out.dim() == 0 ? 1 : out.size(d), d);
    Tensor dst = out.dim() == 0 ? out : restride(out, index.sizes(), d);
    Tensor s;
    if (src.dim() == 0 && index.dim() > 0) {
        s = make_tensor(src.storage(), src.scalar_type(), index.sizes().vec(),
                        std::vector<int64_t>(static_cast<size_t>(index.dim()), 0), src.storage_offset());
    } else {
        s = make_tensor(src.storage(), src.scalar_type(), index.sizes().vec(), src.strides().vec(), src.storage_offset());
    }
    index_loop(dst, cast(s, out.scalar_type()), off, accumulate ? IndexMode::Accumulate : IndexMode::Put,
               out.dim() == 0 ? 0 : out.stride(d));
}

// Writes (accumulate: adds) src into out at index along dim, after PyTorch's shape checks
// (is_value: src is a 0-dim value broadcast to index, not shape-checked). No autograd.
void scatter_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, bool is_value,
                  bool accumulate) {
    const int64_t d = wrap_dim(dim, out.dim());
    check_gather_shapes(out, d, index, accumulate ? "scatter_add" : "scatter", is_value ? nullptr : &src);
    scatter_kernel(out, d, index, src, accumulate);
}

// scatter (accumulate false) or scatter_add of the tensor src into a copy of self, with autograd.
Tensor scatter_src(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, bool accumulate) {
    Tensor out = self.detach().clone();
    scatter_into(out, dim, index, src, false, accumulate);
    if (auto n = make_node(accumulate ? "ScatterAddBackward0" : "ScatterBackward0", {self, src})) {
        set_history(out, n, 0);
        const int64_t d = wrap_dim(dim, self.dim());
        const Tensor saved = index.detach();
        n->set_formula([d, saved, accumulate](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            Tensor gs = node.needs(0) ? (accumulate ? g[0] : g[0].scatter(d, saved, 0)) : Tensor();
            Tensor gsrc = node.needs(1) ? g[0].gather(d, saved) : Tensor();
            return {gs, gsrc};
        });
    }
    return out;
}

}  // namespace

// ---- nonzero / masked_select -----------------------------------------------------------------------------
Tensor nonzero(const Tensor& self) {
    NoGradGuard g;
    const Tensor b = contiguous_data(cast(self, kBool));
    const bool* p = static_cast<const bool*>(b.data_ptr());
    const int64_t n = b.numel(), nd = self.dim();
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += p[i] ? 1 : 0;
    Tensor out = empty_tensor({count, nd}, kLong);
    int64_t* op = static_cast<int64_t*>(out.data_ptr());
    std::vector<int64_t> pos(static_cast<size_t>(nd), 0);
    for (int64_t i = 0; i < n; ++i) {
        if (p[i]) {
            for (int64_t k = 0; k < nd; ++k) *op++ = pos[static_cast<size_t>(k)];
        }
        for (int64_t k = nd - 1; k >= 0; --k) {
            if (++pos[static_cast<size_t>(k)] < self.size(k)) break;
            pos[static_cast<size_t>(k)] = 0;
        }
    }
    return out;
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
    EMBER_CHECK(mask.scalar_type() == kBool, "masked_select: expected BoolTensor for mask");
    const std::vector<int64_t> shape = infer_size(self.sizes(), mask.sizes());
    Tensor s = self.sizes() == IntArrayRef(shape) ? self : self.expand(shape);
    Tensor m;
    {
        NoGradGuard g;
        m = mask.expand(shape);
    }
    std::vector<std::optional<Tensor>> idx{m};
    return index(s, idx);
}

// ---- aten index / index_put ------------------------------------------------------------------------------
Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
    std::vector<std::optional<Tensor>> idx;
    {
        NoGradGuard g;
        idx = expand_masks(self, indices);
    }
    Tensor out = index_kernel(self, idx);
    if (auto n = make_node("IndexBackward0", {self})) {
        set_history(out, n, 0);
        const auto s0 = self.sizes().vec();
        const auto saved = detach_indices(idx);
        n->set_formula([s0, saved](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {index_put(zeros(s0, g[0].scalar_type()), saved, g[0], /*accumulate=*/true)};
        });
    }
    return out;
}

Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate) {
    std::vector<std::optional<Tensor>> idx;
    Tensor out;
    {
        NoGradGuard g;
        idx = expand_masks(self, indices);
        out = self.clone();
    }
    index_put_kernel(out, idx, values, accumulate);
    if (auto n = make_node("IndexPutBackward0", {self, values})) {
        set_history(out, n, 0);
        const auto sv = values.sizes().vec();
        const auto saved = detach_indices(idx);
        n->set_formula([saved, sv, accumulate](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            Tensor gs, gv;
            if (node.needs(0)) gs = accumulate ? g[0] : index_put(g[0], saved, zeros({}, g[0].scalar_type()), false);
            if (node.needs(1)) gv = reduce_grad(index(g[0], saved), sv);
            return {gs, gv};
        });
    }
    return out;
}

Tensor Tensor::index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values, bool accumulate) const {
    return ember::index_put(*this, indices, values, accumulate);
}

Tensor& Tensor::index_put_(const std::vector<std::optional<Tensor>>& indices, const Tensor& values, bool accumulate) const {
    const Tensor& self = *this;
    return inplace_op(self, {values}, [&](const Tensor& s_) { return ember::index_put(s_, indices, values, accumulate); }, [&] {
        std::vector<std::optional<Tensor>> idx = expand_masks(self, indices);
        index_put_kernel(self, idx, values, accumulate);
    });
}

// ---- Python-style indexing -------------------------------------------------------------------------------
namespace {

// Applies the basic indices (ints, slices, None, Ellipsis, bools) as views; returns the view
// and the tensor indices aligned with its dims.
Tensor apply_slicing(const Tensor& self, ArrayRef<indexing::TensorIndex> indices,
                     std::vector<std::optional<Tensor>>& tensor_indices) {
    int64_t specified = 0;
    bool seen_ellipsis = false;
    for (const auto& idx : indices) {
        if (idx.is_integer() || idx.is_slice()) ++specified;
        if (idx.is_tensor()) {
            const Tensor& t = idx.tensor();
            specified += (t.scalar_type() == kBool || t.scalar_type() == kByte) ? t.dim() : 1;
        }
        if (idx.is_ellipsis()) {
            EMBER_CHECK_INDEX(!seen_ellipsis, "an index can only have a single ellipsis ('...')");
            seen_ellipsis = true;
        }
    }
    if (self.dim() == 0) {
        for (const auto& idx : indices) {
            EMBER_CHECK_INDEX(!idx.is_integer(), "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
        }
    }
    EMBER_CHECK_INDEX(specified <= self.dim(), "too many indices for tensor of dimension ", self.dim());
    Tensor result = self;
    int64_t dim = 0;
    for (const auto& idx : indices) {
        switch (idx.type()) {
            case indexing::TensorIndexType::None:
                result = result.unsqueeze(dim);
                tensor_indices.emplace_back(std::nullopt);
                ++dim;
                break;
            case indexing::TensorIndexType::Ellipsis:
                for (int64_t k = 0; k < self.dim() - specified; ++k) {
                    tensor_indices.emplace_back(std::nullopt);
                    ++dim;
                }
                break;
            case indexing::TensorIndexType::Integer: {
                EMBER_CHECK_INDEX(result.dim() > 0, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                                    "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
                const int64_t size = result.size(dim);
                const int64_t i = idx.integer();
                if (i < -size || i >= size) out_of_bounds(i, dim, size);
                result = result.select(dim, i);
                break;
            }
            case indexing::TensorIndexType::Boolean: {
                result = result.unsqueeze(dim);
                tensor_indices.emplace_back(ember::tensor({idx.boolean()}));
                ++dim;
                break;
            }
            case indexing::TensorIndexType::Slice: {
                const auto& s = idx.slice();
                EMBER_CHECK_VALUE(s.step() > 0, "step must be greater than zero");
                const int64_t size = result.size(dim);
                int64_t start = s.start(), stop = s.stop();
                if (start < -size) start = 0;
                if (stop > size) stop = size;
                if (stop < -size) stop = 0;
                if (start > size) start = size;
                result = result.slice(dim, start, stop, s.step());
                tensor_indices.emplace_back(std::nullopt);
                ++dim;
                break;
            }
            case indexing::TensorIndexType::Tensor: {
                const Tensor& t = idx.tensor();
                check_index_dtype(t);
                tensor_indices.emplace_back(t);
                dim += (t.scalar_type() == kBool || t.scalar_type() == kByte) ? std::max<int64_t>(t.dim(), 1) : 1;
                if ((t.scalar_type() == kBool || t.scalar_type() == kByte) && t.dim() == 0) {
                    // a 0-dim mask acts like a bool scalar
                    tensor_indices.pop_back();
                    result = result.unsqueeze(dim - 1);
                    tensor_indices.emplace_back(t.reshape({1}));
                }
                break;
            }
        }
    }
    return result;
}

bool has_tensor(const std::vector<std::optional<Tensor>>& idx) {
    for (const auto& t : idx) {
        if (t) return true;
    }
    return false;
}

}  // namespace

Tensor Tensor::index(ArrayRef<indexing::TensorIndex> indices) const {
    std::vector<std::optional<Tensor>> tensor_indices;
    Tensor sliced = apply_slicing(*this, indices, tensor_indices);
    if (!has_tensor(tensor_indices)) {
        // a plain view (Python returns self itself for x[...], a view here as well)
        return sliced.is_same(*this) ? ember::slice(*this, 0) .view(sizes()) : sliced;
    }
    return ember::index(sliced, tensor_indices);
}

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
    return index(ArrayRef<indexing::TensorIndex>(indices));
}

// value without its leading size-1 dims (as PyTorch's setitem: x[0] = ones(1, 3) works)
static Tensor strip_leading_ones(const Tensor& value) {
    int64_t k = 0;
    while (k < value.dim() && value.size(k) == 1) ++k;
    if (k == 0) return value;
    return value.view(std::vector<int64_t>(value.sizes().begin() + k, value.sizes().end()));
}

Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value) const {
    std::vector<std::optional<Tensor>> tensor_indices;
    Tensor sliced = apply_slicing(*this, indices, tensor_indices);
    const Tensor v = strip_leading_ones(value);
    if (!has_tensor(tensor_indices)) {
        sliced.copy_(v);
    } else {
        sliced.index_put_(tensor_indices, v);
    }
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value) const {
    return index_put_(ArrayRef<indexing::TensorIndex>(indices), value);
}

Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value) const {
    std::vector<std::optional<Tensor>> tensor_indices;
    Tensor sliced = apply_slicing(*this, indices, tensor_indices);
    if (!has_tensor(tensor_indices)) {
        sliced.fill_(value);
    } else {
        sliced.index_put_(tensor_indices, scalar_to_tensor(value, scalar_type()));
    }
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const {
    return index_put_(ArrayRef<indexing::TensorIndex>(indices), value);
}

Tensor Tensor::operator[](const Tensor& index) const { return this->index({indexing::TensorIndex(index)}); }

namespace indexing {
std::ostream& operator<<(std::ostream& os, const TensorIndex& index) {
    switch (index.type()) {
        case TensorIndexType::None: return os << "None";
        case TensorIndexType::Ellipsis: return os << "...";
        case TensorIndexType::Integer: return os << index.integer();
        case TensorIndexType::Boolean: return os << (index.boolean() ? "true" : "false");
        case TensorIndexType::Slice: return os << index.slice();
        case TensorIndexType::Tensor: return os << "Tensor" << index.tensor().sizes();
    }
    return os;
}
}  // namespace indexing

// ---- index_select / gather / scatter / index_add ---------------------------------------------------------
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
    EMBER_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
    EMBER_CHECK(index.scalar_type() == kLong || index.scalar_type() == kInt,
                "index_select(): Expected dtype int32 or int64 for index");
    const int64_t d = wrap_dim(dim, self.dim());
    Tensor idx = index.dim() == 0 ? index.reshape({1}) : index;
    Tensor out;
    if (self.dim() == 0) {
        NoGradGuard g;
        (void)dim_offsets(idx, 1, 0);
        out = self.clone().reshape(idx.dim() == 1 && index.dim() == 1 ? std::vector<int64_t>{idx.numel()} : std::vector<int64_t>{});
    } else {
        std::vector<std::optional<Tensor>> list(static_cast<size_t>(d), std::nullopt);
        list.emplace_back(idx);
        NoGradGuard g;
        out = index_kernel(self, list);
    }
    const auto s0 = self.sizes().vec();
    const Tensor saved = idx.detach();
    record_unary(out, self, "IndexSelectBackward0", [s0, d, saved](const Tensor& g) {
        return s0.empty() ? g.sum() : zeros(s0, g.scalar_type()).index_add(d, saved, g);
    });
    return out;
}

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
    const int64_t d = wrap_dim(dim, self.dim());
    check_gather_shapes(self, d, index, "gather", nullptr);
    Tensor out = empty_tensor(index.sizes(), self.scalar_type());
    if (index.numel() > 0) {
        const Tensor off = dim_offsets(index, self.dim() == 0 ? 1 : self.size(d), d);
        Tensor src = self.dim() == 0 ? self : restride(self, index.sizes(), d);
        index_loop(out, src, off, IndexMode::Gather, self.dim() == 0 ? 0 : self.stride(d));
    }
    const auto s0 = self.sizes().vec();
    const Tensor saved = index.detach();
    record_unary(out, self, "GatherBackward0",
                 [s0, d, saved](const Tensor& g) { return zeros(s0, g.scalar_type()).scatter_add(d, saved, g); });
    return out;
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
    return scatter_src(self, dim, index, src, false);
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
    Tensor out = self.detach().clone();
    scatter_into(out, dim, index, scalar_to_tensor(value, self.scalar_type()), true, false);
    const int64_t d = wrap_dim(dim, self.dim());
    const Tensor saved = index.detach();
    record_unary(out, self, "ScatterBackward1", [d, saved](const Tensor& g) { return g.scatter(d, saved, 0); });
    return out;
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
    return scatter_src(self, dim, index, src, true);
}

static void index_add_kernel(const Tensor& out, int64_t d, const Tensor& index, const Tensor& source, const Scalar& alpha) {
    EMBER_CHECK_INDEX(index.dim() <= 1, "index_add_(): Index is supposed to be a vector");
    const int64_t n = index.numel();
    const int64_t src_len = source.dim() == 0 ? 1 : source.size(d);
    EMBER_CHECK_INDEX(n == src_len, "index_add_(): Number of indices (", n, ") should be equal to source.size(dim) (",
                      src_len, ")");
    if (n == 0) return;
    NoGradGuard g;
    Tensor src = alpha.toDouble() == 1.0 ? source : source * alpha;
    if (out.dim() == 0) {
        out.add_(src.reshape({}));
        return;
    }
    const Tensor off = dim_offsets(index.reshape({-1}), out.size(d), d);
    // offsets viewed with source's shape (stride 1 along d, 0 elsewhere)
    std::vector<int64_t> ostr(static_cast<size_t>(source.dim()), 0);
    ostr[static_cast<size_t>(d)] = 1;
    Tensor off_r = make_tensor(off.storage(), kLong, source.sizes().vec(), ostr, 0);
    Tensor dst = restride(out, source.sizes(), d);
    index_loop(dst, cast(src, out.scalar_type()), off_r, IndexMode::Accumulate, out.stride(d));
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
    const int64_t d = wrap_dim(dim, self.dim());
    Tensor out = self.detach().clone();
    index_add_kernel(out, d, index, source, alpha);
    if (auto n = make_node("IndexAddBackward0", {self, source})) {
        set_history(out, n, 0);
        const Tensor saved = index.detach();
        const double al = alpha.toDouble();
        const auto ss = source.sizes().vec();
        n->set_formula([d, saved, al, ss](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            Tensor gsrc;
            if (node.needs(1)) {
                gsrc = g[0].dim() == 0 ? g[0] : g[0].index_select(d, saved.reshape({-1}));
                if (al != 1.0) gsrc = gsrc * al;
                gsrc = gsrc.reshape(ss);
            }
            return {node.needs(0) ? g[0] : Tensor(), gsrc};
        });
    }
    return out;
}

Tensor one_hot(const Tensor& self, int64_t num_classes) {
    EMBER_CHECK(self.scalar_type() == kLong, "one_hot is only applicable to index tensor of type LongTensor.");
    NoGradGuard g;
    if (self.numel() == 0) {
        EMBER_CHECK(num_classes > 0, "Can not infer total number of classes from empty tensor.");
    } else {
        EMBER_CHECK(self.min().item<int64_t>() >= 0, "Class values must be non-negative.");
        const int64_t mx = self.max().item<int64_t>();
        if (num_classes == -1) num_classes = mx + 1;
        EMBER_CHECK(mx < num_classes, "Class values must be smaller than num_classes.");
    }
    std::vector<int64_t> shape = self.sizes().vec();
    shape.push_back(num_classes);
    return zeros(shape, kLong).scatter(-1, self.unsqueeze(-1), 1);
}

// ---- methods ---------------------------------------------------------------------------------------------
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return ember::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return ember::gather(*this, dim, index); }
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
    return ember::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
    return ember::scatter(*this, dim, index, value);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
    return ember::scatter_add(*this, dim, index, src);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
    return ember::index_add(*this, dim, index, source, alpha);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
    const Tensor& self = *this;
    return inplace_op(self, {src}, [&](const Tensor& s_) { return ember::scatter(s_, dim, index, src); },
                      [&] { scatter_into(self, dim, index, src, false, false); });
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) const {
    const Tensor& self = *this;
    return inplace_op(self, {}, [&](const Tensor& s_) { return ember::scatter(s_, dim, index, value); },
                      [&] { scatter_into(self, dim, index, scalar_to_tensor(value, self.scalar_type()), true, false); });
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
    const Tensor& self = *this;
    return inplace_op(self, {src}, [&](const Tensor& s_) { return ember::scatter_add(s_, dim, index, src); },
                      [&] { scatter_into(self, dim, index, src, false, true); });
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
    const Tensor& self = *this;
    return inplace_op(self, {source}, [&](const Tensor& s_) { return ember::index_add(s_, dim, index, source, alpha); },
                      [&] { index_add_kernel(self, wrap_dim(dim, self.dim()), index, source, alpha); });
}
Tensor Tensor::masked_select(const Tensor& mask) const { return ember::masked_select(*this, mask); }
Tensor Tensor::nonzero() const { return ember::nonzero(*this); }

}  // namespace ember
