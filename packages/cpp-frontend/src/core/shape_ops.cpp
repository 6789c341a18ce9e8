// Shape ops: views (view, permute, transpose, expand, narrow, select, slice, split, ...),
// reshape, cat/stack, repeat, tril/triu, flip, and their gradients.
#include <algorithm>
#include <numeric>

#include "op_common.h"

namespace ember {

using namespace native;

namespace {

std::optional<std::vector<int64_t>> compute_stride(IntArrayRef oldshape, IntArrayRef oldstride, IntArrayRef newshape) {
    if (oldshape.empty()) return std::vector<int64_t>(newshape.size(), 1);
    const int64_t numel = prod(oldshape);
    if (numel == 0 && oldshape == newshape) return oldstride.vec();
    std::vector<int64_t> newstride(newshape.size());
    if (numel == 0) {
        for (int64_t d = static_cast<int64_t>(newshape.size()) - 1; d >= 0; --d) {
            const size_t u = static_cast<size_t>(d);
            newstride[u] = d == static_cast<int64_t>(newshape.size()) - 1 ? 1 : std::max<int64_t>(newshape[u + 1], 1) * newstride[u + 1];
        }
        return newstride;
    }
    int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
    int64_t chunk_base_stride = oldstride.back();
    int64_t tensor_numel = 1, view_numel = 1;
    for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
        const size_t td = static_cast<size_t>(tensor_d);
        tensor_numel *= oldshape[td];
        if (tensor_d == 0 || (oldshape[td - 1] != 1 && oldstride[td - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || newshape[static_cast<size_t>(view_d)] == 1)) {
                newstride[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
                view_numel *= newshape[static_cast<size_t>(view_d)];
                --view_d;
            }
            if (view_numel != tensor_numel) return std::nullopt;
            if (tensor_d > 0) {
                chunk_base_stride = oldstride[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if (view_d != -1) return std::nullopt;
    return newstride;
}

// Resolves a -1 in shape for numel elements (PyTorch's messages).
std::vector<int64_t> infer_view_size(IntArrayRef shape, int64_t numel) {
    std::vector<int64_t> res = shape.vec();
    int64_t newsize = 1;
    std::optional<size_t> infer;
    for (size_t i = 0; i < res.size(); ++i) {
        if (res[i] == -1) {
            EMBER_CHECK(!infer, "only one dimension can be inferred");
            infer = i;
        } else {
            EMBER_CHECK(res[i] >= 0, "invalid shape dimension ", res[i]);
            newsize *= res[i];
        }
    }
    if (numel == newsize || (infer && newsize > 0 && numel % newsize == 0)) {
        if (infer) {
            EMBER_CHECK(newsize != 0, "cannot reshape tensor of 0 elements into shape ", shape,
                        " because the unspecified dimension size -1 can be any value and is ambiguous");
            res[*infer] = numel / newsize;
        }
        return res;
    }
    EMBER_ERROR("shape '", shape, "' is invalid for input of size ", numel);
}

// Records a single-input node whose formula maps the output gradient to the input's.
template <typename F>
void record_view(const Tensor& self, const Tensor& out, const char* name, F formula) {
    if (auto n = make_node(name, {self})) {
        set_history(out, n, 0);
        n->set_formula([formula](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {formula(g[0])};
        });
    }
}

// zeros of `shape` with view_fn(zeros) = src; differentiable w.r.t. src.
template <typename ViewFn>
Tensor view_scatter(const Tensor& src, IntArrayRef shape, ViewFn view_fn, const char* name) {
    Tensor out = zeros(shape, src.scalar_type());
    {
        NoGradGuard guard;
        copy_kernel(view_fn(out), src);
    }
    record_view(src, out, name, [view_fn](const Tensor& g) { return view_fn(g); });
    return out;
}

Tensor unsafe_view(const Tensor& self, IntArrayRef shape, const char* name) {
    auto strides = compute_stride(self.sizes(), self.strides(), shape);
    EMBER_CHECK(strides.has_value(), "view size is not compatible with input tensor's size and stride (at least one "
                                     "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
    Tensor out = make_view(self, shape.vec(), *strides, self.storage_offset());
    const auto s0 = self.sizes().vec();
    record_view(self, out, name, [s0](const Tensor& g) { return g.reshape(s0); });
    return out;
}

}  // namespace

// ---- view / reshape ----------------------------------------------------------------------------------
Tensor view(const Tensor& self, IntArrayRef size) {
    const std::vector<int64_t> shape = infer_view_size(size, self.numel());
    return unsafe_view(self, shape, "ViewBackward0");
}

Tensor reshape(const Tensor& self, IntArrayRef shape_in) {
    const std::vector<int64_t> shape = infer_view_size(shape_in, self.numel());
    if (compute_stride(self.sizes(), self.strides(), shape)) return unsafe_view(self, shape, "ViewBackward0");
    Tensor c = self.clone();
    if (!c.is_contiguous()) c = c.contiguous();
    Tensor out;
    {
        NoGradGuard g;
        out = make_tensor(c.storage(), c.scalar_type(), shape, contiguous_strides(shape), c.storage_offset());
    }
    const auto s0 = self.sizes().vec();
    record_view(c, out, "UnsafeViewBackward0", [s0](const Tensor& g) { return g.reshape(s0); });
    return out;
}

Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
    EMBER_CHECK(size.size() == stride.size(), "mismatch in length of strides and shape");
    const int64_t offset = storage_offset.value_or(self.storage_offset());
    EMBER_CHECK(offset >= 0, "Tensor: invalid storage offset ", offset);
    int64_t extent = offset + 1;
    bool empty = false;
    for (size_t i = 0; i < size.size(); ++i) {
        EMBER_CHECK(size[i] >= 0, "Trying to create tensor with negative dimension ", size[i], ": ", size);
        EMBER_CHECK(stride[i] >= 0, "as_strided: Negative strides are not supported at the moment, got strides: ", stride);
        if (size[i] == 0) empty = true;
        extent += (size[i] - 1) * stride[i];
    }
    if (!empty) {
        const int64_t storage_elems = static_cast<int64_t>(self.storage().nbytes() / static_cast<size_t>(self.element_size()));
        EMBER_CHECK(extent <= storage_elems, "setStorage: sizes ", size, ", strides ", stride, ", storage offset ", offset,
                    ", and itemsize ", self.element_size(), " requiring a storage size of ", extent * self.element_size(),
                    " are out of bounds for storage of size ", storage_elems * self.element_size());
    }
    Tensor out = make_view(self, size.vec(), stride.vec(), offset);
    if (auto n = make_node("AsStridedBackward0", {self})) {
        set_history(out, n, 0);
        const auto bs = self.sizes().vec(), bst = self.strides().vec();
        const int64_t boff = self.storage_offset();
        const auto vs = size.vec(), vst = stride.vec();
        n->set_formula([bs, bst, boff, vs, vst, offset](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            // gradient laid out like the input (same strides, offset 0), then g added at the view's places
            Tensor r = empty_strided(bs, bst, g[0].scalar_type());
            {
                NoGradGuard guard;
                r.zero_();
            }
            Tensor slot = r.as_strided(vs, vst, offset - boff);
            slot.add_(g[0]);
            return {r};
        });
    }
    return out;
}

// ---- permute / transpose / t -------------------------------------------------------------------------
Tensor permute(const Tensor& self, IntArrayRef dims) {
    const int64_t nd = self.dim();
    EMBER_CHECK(static_cast<int64_t>(dims.size()) == nd,
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
                "desired ordering of dimensions i.e. input.dim() = ", nd, " is not equal to len(dims) = ", dims.size());
    std::vector<int64_t> sizes(static_cast<size_t>(nd)), strides(static_cast<size_t>(nd)), perm(static_cast<size_t>(nd));
    std::vector<bool> seen(static_cast<size_t>(nd), false);
    for (int64_t i = 0; i < nd; ++i) {
        const int64_t d = wrap_dim(dims[static_cast<size_t>(i)], nd);
        EMBER_CHECK(!seen[static_cast<size_t>(d)], "permute(): duplicate dims are not allowed.");
        seen[static_cast<size_t>(d)] = true;
        perm[static_cast<size_t>(i)] = d;
        sizes[static_cast<size_t>(i)] = self.size(d);
        strides[static_cast<size_t>(i)] = self.stride(d);
    }
    Tensor out = make_view(self, sizes, strides, self.storage_offset());
    std::vector<int64_t> inv(static_cast<size_t>(nd));
    for (int64_t i = 0; i < nd; ++i) inv[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
    record_view(self, out, "PermuteBackward0", [inv](const Tensor& g) { return g.permute(inv); });
    return out;
}

static Tensor transpose_impl(const Tensor& self, int64_t dim0, int64_t dim1, const char* name) {
    const int64_t nd = self.dim();
    const int64_t d0 = wrap_dim(dim0, nd), d1 = wrap_dim(dim1, nd);
    std::vector<int64_t> sizes = self.sizes().vec(), strides = self.strides().vec();
    if (nd > 0) {
        std::swap(sizes[static_cast<size_t>(d0)], sizes[static_cast<size_t>(d1)]);
        std::swap(strides[static_cast<size_t>(d0)], strides[static_cast<size_t>(d1)]);
    }
    Tensor out = make_view(self, sizes, strides, self.storage_offset());
    if (std::string(name) == "TBackward0") {
        record_view(self, out, name, [](const Tensor& g) { return g.t(); });
    } else {
        record_view(self, out, name, [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
    }
    return out;
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
    return transpose_impl(self, dim0, dim1, "TransposeBackward0");
}

Tensor t(const Tensor& self) {
    EMBER_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
    if (self.dim() < 2) return transpose_impl(self, 0, 0, "TBackward0");
    return transpose_impl(self, 0, 1, "TBackward0");
}

// ---- squeeze / unsqueeze / flatten -------------------------------------------------------------------
Tensor unsqueeze(const Tensor& self, int64_t dim) {
    const int64_t d = wrap_dim(dim, self.dim() + 1);
    std::vector<int64_t> sizes = self.sizes().vec(), strides = self.strides().vec();
    const int64_t new_stride = d >= self.dim() ? 1 : self.size(d) * self.stride(d);
    sizes.insert(sizes.begin() + d, 1);
    strides.insert(strides.begin() + d, new_stride);
    Tensor out = make_view(self, sizes, strides, self.storage_offset());
    record_view(self, out, "UnsqueezeBackward0", [d](const Tensor& g) { return g.squeeze(d); });
    return out;
}

Tensor squeeze(const Tensor& self) {
    std::vector<int64_t> sizes, strides;
    for (int64_t i = 0; i < self.dim(); ++i) {
        if (self.size(i) != 1) {
            sizes.push_back(self.size(i));
            strides.push_back(self.stride(i));
        }
    }
    Tensor out = make_view(self, sizes, strides, self.storage_offset());
    const auto s0 = self.sizes().vec();
    record_view(self, out, "SqueezeBackward0", [s0](const Tensor& g) { return g.reshape(s0); });
    return out;
}

Tensor squeeze(const Tensor& self, int64_t dim) {
    const int64_t d = wrap_dim(dim, self.dim());
    std::vector<int64_t> sizes = self.sizes().vec(), strides = self.strides().vec();
    const bool squeezes = self.dim() > 0 && self.size(d) == 1;
    if (squeezes) {
        sizes.erase(sizes.begin() + d);
        strides.erase(strides.begin() + d);
    }
    Tensor out = make_view(self, sizes, strides, self.storage_offset());
    record_view(self, out, "SqueezeBackward1", [d, squeezes](const Tensor& g) { return squeezes ? g.unsqueeze(d) : g; });
    return out;
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
    if (self.dim() == 0) return self.reshape({1});
    const int64_t s = wrap_dim(start_dim, self.dim()), e = wrap_dim(end_dim, self.dim());
    EMBER_CHECK(s <= e, "flatten() has invalid args: start_dim cannot come after end_dim");
    if (s == e) return self;
    std::vector<int64_t> shape;
    for (int64_t i = 0; i < s; ++i) shape.push_back(self.size(i));
    int64_t m = 1;
    for (int64_t i = s; i <= e; ++i) m *= self.size(i);
    shape.push_back(m);
    for (int64_t i = e + 1; i < self.dim(); ++i) shape.push_back(self.size(i));
    return self.reshape(shape);
}

Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
    const int64_t d = wrap_dim(dim, self.dim());
    EMBER_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
    int64_t known = 1;
    int infer = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] == -1) {
            EMBER_CHECK(infer < 0, "only one dimension can be inferred");
            infer = static_cast<int>(i);
        } else {
            known *= sizes[i];
        }
    }
    std::vector<int64_t> inner = sizes.vec();
    if (infer >= 0) {
        EMBER_CHECK(known != 0 && self.size(d) % known == 0, "unflatten: Provided sizes ", sizes,
                    " don't multiply up to the size of dim ", dim, " (", self.size(d), ") in the input tensor");
        inner[static_cast<size_t>(infer)] = self.size(d) / known;
    } else {
        EMBER_CHECK(known == self.size(d), "unflatten: Provided sizes ", sizes, " don't multiply up to the size of dim ",
                    dim, " (", self.size(d), ") in the input tensor");
    }
    std::vector<int64_t> shape;
    for (int64_t i = 0; i < d; ++i) shape.push_back(self.size(i));
    shape.insert(shape.end(), inner.begin(), inner.end());
    for (int64_t i = d + 1; i < self.dim(); ++i) shape.push_back(self.size(i));
    return self.view(shape);
}

// ---- expand ------------------------------------------------------------------------------------------
Tensor expand(const Tensor& self, IntArrayRef size) {
    const int64_t nd = static_cast<int64_t>(size.size()), sd = self.dim();
    EMBER_CHECK(nd >= sd, "expand(ember.", scalar_type_name(self.scalar_type()), "Tensor{", self.sizes(),
                "}, size=", size, "): the number of sizes provided (", nd,
                ") must be greater or equal to the number of dimensions in the tensor (", sd, ")");
    std::vector<int64_t> sizes(static_cast<size_t>(nd)), strides(static_cast<size_t>(nd));
    for (int64_t i = nd - 1; i >= 0; --i) {
        const int64_t off = nd - 1 - i;
        const int64_t dim = sd - 1 - off;
        const int64_t want = size[static_cast<size_t>(i)];
        if (dim >= 0) {
            const int64_t have = self.size(dim);
            int64_t target = want == -1 ? have : want;
            EMBER_CHECK(have == target || have == 1, "The expanded size of the tensor (", target,
                        ") must match the existing size (", have, ") at non-singleton dimension ", i, ".  Target sizes: ",
                        size, ".  Tensor sizes: ", self.sizes());
            sizes[static_cast<size_t>(i)] = target;
            strides[static_cast<size_t>(i)] = have == target ? self.stride(dim) : 0;
        } else {
            EMBER_CHECK(want >= 0, "The expanded size of the tensor (", want,
                        ") isn't allowed in a leading, non-existing dimension ", i);
            sizes[static_cast<size_t>(i)] = want;
            strides[static_cast<size_t>(i)] = 0;
        }
    }
    Tensor out = make_view(self, sizes, strides, self.storage_offset());
    const auto s0 = self.sizes().vec();
    record_view(self, out, "ExpandBackward0", [s0](const Tensor& g) { return sum_to(g, s0); });
    return out;
}

// ---- narrow / slice / select ---------------------------------------------------------------------------
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt,
             int64_t step) {
    EMBER_CHECK(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
    EMBER_CHECK(step > 0, "slice step must be positive");
    const int64_t d = wrap_dim(dim, self.dim());
    const int64_t size = self.size(d);
    int64_t start = start_opt.value_or(0), end = end_opt.value_or(size);
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, start, size);
    const int64_t len = (end - start + step - 1) / step;
    std::vector<int64_t> sizes = self.sizes().vec(), strides = self.strides().vec();
    sizes[static_cast<size_t>(d)] = len;
    strides[static_cast<size_t>(d)] *= step;
    Tensor out = make_view(self, sizes, strides, self.storage_offset() + start * self.stride(d));
    if (auto n = make_node("SliceBackward0", {self})) {
        set_history(out, n, 0);
        const auto s0 = self.sizes().vec();
        n->set_formula([s0, d, start, end, step](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {view_scatter(g[0], s0, [d, start, end, step](const Tensor& t) { return t.slice(d, start, end, step); },
                                 "SliceBackwardBackward0")};
        });
    }
    return out;
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
    EMBER_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
    EMBER_CHECK(length >= 0, "narrow(): length must be non-negative.");
    const int64_t d = wrap_dim(dim, self.dim());
    const int64_t size = self.size(d);
    EMBER_CHECK_INDEX(start >= -size && start <= size, "start out of range (expected to be in range of [", -size, ", ",
                      size, "], but got ", start, ")");
    if (start < 0) start += size;
    EMBER_CHECK(start <= size - length, "start (", start, ") + length (", length, ") exceeds dimension size (", size, ").");
    return slice(self, d, start, start + length, 1);
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
    EMBER_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
    const int64_t d = wrap_dim(dim, self.dim());
    const int64_t size = self.size(d);
    EMBER_CHECK_INDEX(index >= -size && index < size, "select(): index ", index, " out of range for tensor of size ",
                      self.sizes(), " at dimension ", d);
    if (index < 0) index += size;
    std::vector<int64_t> sizes = self.sizes().vec(), strides = self.strides().vec();
    sizes.erase(sizes.begin() + d);
    strides.erase(strides.begin() + d);
    Tensor out = make_view(self, sizes, strides, self.storage_offset() + index * self.stride(d));
    if (auto n = make_node("SelectBackward0", {self})) {
        set_history(out, n, 0);
        const auto s0 = self.sizes().vec();
        n->set_formula([s0, d, index](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {view_scatter(g[0], s0, [d, index](const Tensor& t) { return t.select(d, index); },
                                 "SelectBackwardBackward0")};
        });
    }
    return out;
}

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
    const int64_t nd = self.dim();
    const int64_t d1 = wrap_dim(dim1, nd), d2 = wrap_dim(dim2, nd);
    EMBER_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
    int64_t diag_size;
    int64_t off = self.storage_offset();
    if (offset >= 0) {
        diag_size = std::max<int64_t>(std::min(self.size(d1), self.size(d2) - offset), 0);
        if (diag_size > 0) off += offset * self.stride(d2);
    } else {
        diag_size = std::max<int64_t>(std::min(self.size(d1) + offset, self.size(d2)), 0);
        if (diag_size > 0) off -= offset * self.stride(d1);
    }
    std::vector<int64_t> sizes, strides;
    for (int64_t i = 0; i < nd; ++i) {
        if (i == d1 || i == d2) continue;
        sizes.push_back(self.size(i));
        strides.push_back(self.stride(i));
    }
    sizes.push_back(diag_size);
    strides.push_back(self.stride(d1) + self.stride(d2));
    Tensor out = make_view(self, sizes, strides, off);
    if (auto n = make_node("DiagonalBackward0", {self})) {
        set_history(out, n, 0);
        const auto s0 = self.sizes().vec();
        n->set_formula([s0, offset, d1, d2](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {view_scatter(g[0], s0, [offset, d1, d2](const Tensor& t) { return t.diagonal(offset, d1, d2); },
                                 "DiagonalBackwardBackward0")};
        });
    }
    return out;
}

// ---- split / chunk / unbind ------------------------------------------------------------------------------
static std::vector<Tensor> split_impl(const Tensor& self, const std::vector<int64_t>& sizes, int64_t d, const char* name,
                                      bool record_sizes) {
    std::vector<Tensor> outs;
    {
        NoGradGuard g;
        int64_t start = 0;
        for (int64_t s : sizes) {
            outs.push_back(self.slice(d, start, start + s));
            start += s;
        }
    }
    for (Tensor& o : outs) {
        o.unsafeGetTensorImpl()->set_view_creation_meta(static_cast<uint8_t>(autograd::CreationMeta::MULTI_OUTPUT_NODE));
    }
    if (auto n = make_node(name, {self})) {
        for (size_t i = 0; i < outs.size(); ++i) set_history(outs[i], n, static_cast<uint32_t>(i));
        for (Tensor& o : outs) o.unsafeGetTensorImpl()->set_view_attr_version(o._version());
        const auto s0 = self.sizes().vec();
        const ScalarType dt = self.scalar_type();
        (void)record_sizes;
        n->set_formula([sizes, d, s0, dt](FunctionNode&, variable_list&& g) -> variable_list {
            std::vector<Tensor> parts;
            bool any = false;
            for (size_t i = 0; i < sizes.size(); ++i) {
                if (i < g.size() && g[i].defined()) {
                    parts.push_back(g[i]);
                    any = true;
                } else {
                    std::vector<int64_t> shape = s0;
                    shape[static_cast<size_t>(d)] = sizes[i];
                    parts.push_back(zeros(shape, dt));
                }
            }
            if (!any) return {Tensor()};
            return {cat(parts, d)};
        });
    }
    return outs;
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
    EMBER_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
    EMBER_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=", split_size);
    const int64_t d = wrap_dim(dim, self.dim());
    const int64_t size = self.size(d);
    EMBER_CHECK(split_size > 0 || size == 0, "split_size can only be 0 if dimension size is 0, but got dimension size of ", size);
    std::vector<int64_t> sizes;
    if (size == 0) {
        sizes.push_back(0);
    } else {
        for (int64_t s = 0; s < size; s += split_size) sizes.push_back(std::min(split_size, size - s));
    }
    return split_impl(self, sizes, d, "SplitBackward0", false);
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
    EMBER_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
    const int64_t d = wrap_dim(dim, self.dim());
    int64_t total = 0;
    for (int64_t s : split_sizes) {
        EMBER_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                    split_sizes);
        total += s;
    }
    EMBER_CHECK(total == self.size(d), "split_with_sizes expects split_sizes to sum exactly to ", self.size(d),
                " (input tensor's size at dimension ", d, "), but got split_sizes=", split_sizes);
    return split_impl(self, split_sizes.vec(), d, "SplitWithSizesBackward0", true);
}

std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
    return split_with_sizes(self, split_sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
    EMBER_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
    EMBER_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
    const int64_t d = wrap_dim(dim, self.dim());
    const int64_t size = self.size(d);
    const int64_t split_size = (size + chunks - 1) / chunks;
    if (split_size == 0 && size == 0) {
        std::vector<int64_t> sizes(static_cast<size_t>(chunks), 0);
        return split_impl(self, sizes, d, "SplitWithSizesBackward0", true);
    }
    return split(self, split_size, d);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
    EMBER_CHECK(self.dim() > 0, "Dimension specified as 0 but tensor has no dimensions");
    const int64_t d = wrap_dim(dim, self.dim());
    std::vector<Tensor> outs;
    {
        NoGradGuard g;
        for (int64_t i = 0; i < self.size(d); ++i) outs.push_back(self.select(d, i));
    }
    for (Tensor& o : outs) {
        o.unsafeGetTensorImpl()->set_view_creation_meta(static_cast<uint8_t>(autograd::CreationMeta::MULTI_OUTPUT_NODE));
    }
    if (auto n = make_node("UnbindBackward0", {self})) {
        for (size_t i = 0; i < outs.size(); ++i) set_history(outs[i], n, static_cast<uint32_t>(i));
        for (Tensor& o : outs) o.unsafeGetTensorImpl()->set_view_attr_version(o._version());
        std::vector<int64_t> part_shape = self.sizes().vec();
        part_shape.erase(part_shape.begin() + d);
        const ScalarType dt = self.scalar_type();
        n->set_formula([d, part_shape, dt](FunctionNode&, variable_list&& g) -> variable_list {
            std::vector<Tensor> parts;
            bool any = false;
            for (const Tensor& gi : g) {
                any = any || gi.defined();
                parts.push_back(gi.defined() ? gi : zeros(part_shape, dt));
            }
            if (!any) return {Tensor()};
            return {stack(parts, d)};
        });
    }
    return outs;
}

// ---- cat / stack / repeat ----------------------------------------------------------------------------------
Tensor cat(TensorList tensors, int64_t dim) {
    EMBER_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
    // legacy: 1-D empty tensors are skipped
    std::vector<Tensor> parts;
    std::vector<size_t> index_of;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        EMBER_CHECK(t.defined(), "Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument #", i);
        if (t.dim() == 1 && t.numel() == 0) continue;
        parts.push_back(t);
        index_of.push_back(i);
    }
    const ScalarType dt = result_type(tensors);
    if (parts.empty()) return empty_tensor({0}, dt);
    const Tensor& ref = parts.front();
    EMBER_CHECK(ref.dim() > 0, "zero-dimensional tensor (at position ", index_of[0], ") cannot be concatenated");
    const int64_t d = wrap_dim(dim, ref.dim());
    std::vector<int64_t> shape = ref.sizes().vec();
    int64_t total = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
        const Tensor& t = parts[k];
        EMBER_CHECK(t.dim() > 0, "zero-dimensional tensor (at position ", index_of[k], ") cannot be concatenated");
        EMBER_CHECK(t.dim() == ref.dim(), "Tensors must have same number of dimensions: got ", ref.dim(), " and ", t.dim());
        for (int64_t i = 0; i < ref.dim(); ++i) {
            if (i == d) continue;
            EMBER_CHECK(t.size(i) == ref.size(i), "Sizes of tensors must match except in dimension ", d,
                        ". Expected size ", ref.size(i), " but got size ", t.size(i), " for tensor number ", index_of[k],
                        " in the list.");
        }
        total += t.size(d);
    }
    shape[static_cast<size_t>(d)] = total;
    Tensor out = empty_tensor(shape, dt);
    int64_t offset = 0;
    std::vector<int64_t> lengths;
    {
        NoGradGuard g;
        for (const Tensor& t : parts) {
            const int64_t len = t.size(d);
            if (len > 0) copy_kernel(out.narrow(d, offset, len), t);
            lengths.push_back(len);
            offset += len;
        }
    }
    variable_list inputs(tensors.begin(), tensors.end());
    if (auto n = make_node("CatBackward0", inputs)) {
        set_history(out, n, 0);
        std::vector<std::vector<int64_t>> shapes;
        for (const Tensor& t : tensors) shapes.push_back(t.sizes().vec());
        n->set_formula([shapes, d](FunctionNode& node, variable_list&& g) -> variable_list {
            variable_list res;
            int64_t off = 0;
            for (size_t i = 0; i < shapes.size(); ++i) {
                const auto& s = shapes[i];
                if (s.size() == 1 && s[0] == 0) {
                    res.push_back(node.needs(i) ? zeros(s, g[0].scalar_type()) : Tensor());
                    continue;
                }
                const int64_t len = s[static_cast<size_t>(d)];
                res.push_back(node.needs(i) && g[0].defined() ? g[0].narrow(d, off, len) : Tensor());
                off += len;
            }
            return res;
        });
    }
    return out;
}

Tensor concat(TensorList tensors, int64_t dim) { return cat(tensors, dim); }

Tensor stack(TensorList tensors, int64_t dim) {
    EMBER_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
    for (size_t i = 1; i < tensors.size(); ++i) {
        EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack expects each tensor to be equal size, but got ",
                    tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
    }
    const int64_t d = wrap_dim(dim, tensors[0].dim() + 1);
    std::vector<Tensor> parts;
    Tensor out;
    {
        NoGradGuard g;
        for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
        out = cat(parts, d);
    }
    variable_list inputs(tensors.begin(), tensors.end());
    if (auto n = make_node("StackBackward0", inputs)) {
        set_history(out, n, 0);
        const size_t count = tensors.size();
        n->set_formula([d, count](FunctionNode& node, variable_list&& g) -> variable_list {
            variable_list res;
            for (size_t i = 0; i < count; ++i) {
                res.push_back(node.needs(i) && g[0].defined() ? g[0].select(d, static_cast<int64_t>(i)) : Tensor());
            }
            return res;
        });
    }
    return out;
}

Tensor repeat(const Tensor& self, IntArrayRef repeats) {
    EMBER_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim(),
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    const int64_t nd = static_cast<int64_t>(repeats.size());
    const int64_t lead = nd - self.dim();
    std::vector<int64_t> padded(static_cast<size_t>(lead), 1);
    for (int64_t s : self.sizes()) padded.push_back(s);
    // view as (1, s0, 1, s1, ...), expand to (r0, s0, r1, s1, ...), copy, view as (r0*s0, ...)
    std::vector<int64_t> inter, expanded, final_shape;
    for (int64_t i = 0; i < nd; ++i) {
        const int64_t r = repeats[static_cast<size_t>(i)], s = padded[static_cast<size_t>(i)];
        EMBER_CHECK(r >= 0, "Trying to create tensor with negative dimension ", r, ": ", repeats);
        inter.push_back(1);
        inter.push_back(s);
        expanded.push_back(r);
        expanded.push_back(s);
        final_shape.push_back(r * s);
    }
    Tensor out;
    {
        NoGradGuard g;
        Tensor e = self.reshape(inter).expand(expanded);
        out = empty_tensor(final_shape, self.scalar_type());
        copy_kernel(out.view(expanded), e);
    }
    if (auto n = make_node("RepeatBackward0", {self})) {
        set_history(out, n, 0);
        const auto s0 = self.sizes().vec();
        n->set_formula([expanded, s0, nd](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            std::vector<int64_t> rdims;
            for (int64_t i = 0; i < nd; ++i) rdims.push_back(2 * i);
            return {g[0].reshape(expanded).sum(rdims).reshape(s0)};
        });
    }
    return out;
}

// ---- tril / triu / flip ----------------------------------------------------------------------------------
static Tensor tri_impl(const Tensor& self, int64_t k, bool lower) {
    EMBER_CHECK(self.dim() >= 2, lower ? "tril" : "triu", ": input tensor must have at least 2 dimensions");
    const int64_t rows = self.size(-2), cols = self.size(-1);
    Tensor keep = empty_tensor({rows, cols}, kBool);
    bool* p = static_cast<bool*>(keep.data_ptr());
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) p[i * cols + j] = lower ? (j - i <= k) : (j - i >= k);
    }
    Tensor out;
    {
        NoGradGuard g;
        out = where(keep, self, zeros({}, self.scalar_type()));
    }
    if (auto n = make_node(lower ? "TrilBackward0" : "TriuBackward0", {self})) {
        set_history(out, n, 0);
        n->set_formula([k, lower](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {lower ? g[0].tril(k) : g[0].triu(k)};
        });
    }
    return out;
}
Tensor tril(const Tensor& self, int64_t diagonal) { return tri_impl(self, diagonal, true); }
Tensor triu(const Tensor& self, int64_t diagonal) { return tri_impl(self, diagonal, false); }

Tensor flip(const Tensor& self, IntArrayRef dims) {
    const std::vector<bool> mask = dims.empty() ? std::vector<bool>(static_cast<size_t>(self.dim()), false)
                                                : dim_mask(dims, self.dim());
    std::vector<int64_t> strides = self.strides().vec();
    int64_t offset = self.storage_offset();
    for (int64_t i = 0; i < self.dim(); ++i) {
        if (mask[static_cast<size_t>(i)] && self.size(i) > 0) {
            offset += (self.size(i) - 1) * strides[static_cast<size_t>(i)];
            strides[static_cast<size_t>(i)] = -strides[static_cast<size_t>(i)];
        }
    }
    Tensor out = empty_tensor(self.sizes(), self.scalar_type());
    if (self.numel() > 0) {
        Tensor src = make_tensor(self.storage(), self.scalar_type(), self.sizes().vec(), strides, offset);
        copy_kernel(out, src);
    }
    const auto d = dims.vec();
    record_view(self, out, "FlipBackward0", [d](const Tensor& g) { return g.flip(d); });
    return out;
}

// ---- Tensor methods ----------------------------------------------------------------------------------------
Tensor Tensor::view(IntArrayRef size) const { return ember::view(*this, size); }
Tensor Tensor::view_as(const Tensor& other) const { return ember::view(*this, other.sizes()); }
Tensor Tensor::reshape(IntArrayRef shape) const { return ember::reshape(*this, shape); }
Tensor Tensor::reshape_as(const Tensor& other) const { return ember::reshape(*this, other.sizes()); }
Tensor Tensor::as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> off) const {
    return ember::as_strided(*this, size, stride, off);
}
Tensor Tensor::permute(IntArrayRef dims) const { return ember::permute(*this, dims); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return ember::transpose(*this, d0, d1); }
Tensor Tensor::t() const { return ember::t(*this); }
Tensor Tensor::unsqueeze(int64_t dim) const { return ember::unsqueeze(*this, dim); }
Tensor Tensor::squeeze() const { return ember::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return ember::squeeze(*this, dim); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return ember::flatten(*this, s, e); }
Tensor Tensor::unflatten(int64_t dim, IntArrayRef sizes) const { return ember::unflatten(*this, dim, sizes); }
Tensor Tensor::expand(IntArrayRef size, bool) const { return ember::expand(*this, size); }
Tensor Tensor::expand_as(const Tensor& other) const { return ember::expand(*this, other.sizes()); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const { return ember::narrow(*this, dim, start, length); }
Tensor Tensor::select(int64_t dim, int64_t index) const { return ember::select(*this, dim, index); }
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
    return ember::slice(*this, dim, start, end, step);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return ember::chunk(*this, chunks, dim); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return ember::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::split(IntArrayRef sizes, int64_t dim) const { return ember::split_with_sizes(*this, sizes, dim); }
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef sizes, int64_t dim) const {
    return ember::split_with_sizes(*this, sizes, dim);
}
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return ember::unbind(*this, dim); }
Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2) const { return ember::diagonal(*this, offset, d1, d2); }
Tensor Tensor::repeat(IntArrayRef repeats) const { return ember::repeat(*this, repeats); }
Tensor Tensor::tril(int64_t diagonal) const { return ember::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return ember::triu(*this, diagonal); }
Tensor Tensor::flip(IntArrayRef dims) const { return ember::flip(*this, dims); }
Tensor Tensor::operator[](int64_t index) const { return ember::select(*this, 0, index); }

}  // namespace ember
