// Shape ops of the C++ op table: views (reshape, view, permute, transpose, expand, narrow,
// select, chunk, split, unbind, ...) share their input's memory as in Python, so a later
// in-place op writes through them; joins (cat, stack) and copies (repeat, flip, ...).
#include <algorithm>
#include <numeric>

#include "ember/error.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

int64_t wrap_dim(int64_t dim, int64_t ndim, const std::string& op) {
    const int64_t n = std::max<int64_t>(ndim, 1);
    if (dim < -n || dim >= n) {
        throw IndexError(op + "(): Dimension out of range (expected to be in range of [" + std::to_string(-n) +
                         ", " + std::to_string(n - 1) + "], but got " + std::to_string(dim) + ")");
    }
    return dim < 0 ? dim + n : dim;
}

// Tensor.view(*shape) / view(dtype): Ember's C++ tensors cannot reinterpret their bytes.
std::vector<int64_t> view_shape(const Args& a, const char* name) {
    if (a[name].kind == Value::Kind::Dtype) {
        throw NotImplementedError(a.op() + "(dtype): reinterpreting a tensor's bytes as another dtype is not "
                                  "supported by Ember's C++ frontend");
    }
    return a.ints(name);
}

Tensor movedim(const Tensor& x, std::vector<int64_t> source, std::vector<int64_t> destination,
               const std::string& op) {
    if (source.size() != destination.size()) {
        throw Error(op + "(): Invalid source or destination dims: source (" + std::to_string(source.size()) +
                    " dims) should contain the same number of dims as destination (" +
                    std::to_string(destination.size()) + " dims)");
    }
    const int64_t n = x.dim();
    for (auto& d : source) d = wrap_dim(d, n, op);
    for (auto& d : destination) d = wrap_dim(d, n, op);
    std::vector<int64_t> order(static_cast<std::size_t>(n), -1);
    std::vector<bool> used(static_cast<std::size_t>(n), false);
    for (std::size_t k = 0; k < source.size(); ++k) {
        order[static_cast<std::size_t>(destination[k])] = source[k];
        used[static_cast<std::size_t>(source[k])] = true;
    }
    int64_t next = 0;
    for (auto& o : order) {
        if (o >= 0) continue;
        while (used[static_cast<std::size_t>(next)]) ++next;
        o = next++;
    }
    return x.permute(order);
}

}  // namespace

void register_shape_ops(OpTable& t) {
    def(t, "reshape", "input, shape", [](const Args& a) {
        return one(a.tensor("input").reshape(a.ints("shape")));
    });
    def(t, "Tensor.view", "input, size", [](const Args& a) {
        return one(a.tensor("input").view(view_shape(a, "size")));
    });
    def(t, "Tensor.view_as", "self, other", [](const Args& a) {
        return one(a.tensor("self").view_as(a.tensor("other")));
    });
    def(t, "Tensor.reshape_as", "self, other", [](const Args& a) {
        return one(a.tensor("self").reshape_as(a.tensor("other")));
    });
    def(t, "ravel", "input", [](const Args& a) { return one(a.tensor("input").reshape({-1})); });
    def(t, "permute", "input, dims", [](const Args& a) {
        return one(a.tensor("input").permute(a.ints("dims")));
    });
    def(t, "transpose", "input, dim0, dim1", [](const Args& a) {
        return one(a.tensor("input").transpose(a.integer("dim0"), a.integer("dim1")));
    });
    def(t, "swapaxes", "input, axis0, axis1", [](const Args& a) {
        return one(a.tensor("input").transpose(a.integer("axis0"), a.integer("axis1")));
    });
    alias(t, "swapdims", "transpose");
    def(t, "t", "input", [](const Args& a) { return one(a.tensor("input").t()); });
    def(t, "Tensor.T", "self", [](const Args& a) {
        Tensor x = a.tensor("self");
        std::vector<int64_t> order(static_cast<std::size_t>(x.dim()));
        std::iota(order.rbegin(), order.rend(), 0);
        return one(x.permute(order));
    });
    def(t, "Tensor.mT", "self", [](const Args& a) {
        Tensor x = a.tensor("self");
        if (x.dim() < 2) throw Error("tensor.mT is only supported on matrices or batches of matrices. Got " + std::to_string(x.dim()) + "-D tensor.");
        return one(x.transpose(-2, -1));
    });
    alias(t, "Tensor.mH", "Tensor.mT");
    def(t, "adjoint", "input", [](const Args& a) { return one(a.tensor("input").transpose(-2, -1)); });
    def(t, "movedim", "input, source, destination", [](const Args& a) {
        return one(movedim(a.tensor("input"), a.ints("source"), a.ints("destination"), a.op()));
    });
    def(t, "unsqueeze", "input, dim", [](const Args& a) {
        return one(a.tensor("input").unsqueeze(a.integer("dim")));
    });
    def(t, "squeeze", "input, dim=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.is_none("dim")) return one(x.squeeze());
        std::vector<int64_t> dims = a.ints("dim");
        const int64_t n = x.dim();
        for (auto& d : dims) d = wrap_dim(d, n, a.op());
        std::sort(dims.rbegin(), dims.rend());
        dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
        for (int64_t d : dims) x = x.squeeze(d);  // descending: earlier dims keep their index
        return one(x);
    });
    def(t, "flatten", "input, start_dim=0, end_dim=-1", [](const Args& a) {
        return one(a.tensor("input").flatten(a.integer("start_dim"), a.integer("end_dim")));
    });
    def(t, "unflatten", "input, dim, sizes", [](const Args& a) {
        return one(a.tensor("input").unflatten(a.integer("dim"), a.ints("sizes")));
    });
    def(t, "Tensor.expand", "input, size", [](const Args& a) {
        return one(a.tensor("input").expand(a.ints("size")));
    });
    def(t, "Tensor.expand_as", "self, other", [](const Args& a) {
        return one(a.tensor("self").expand_as(a.tensor("other")));
    });
    def(t, "broadcast_to", "input, size", [](const Args& a) {
        return one(a.tensor("input").expand(a.ints("size")));
    });
    def(t, "broadcast_tensors", "*tensors", [](const Args& a) {
        std::vector<Tensor> ts;
        for (const Value& v : a.varargs()) {
            if (!v.is_tensor()) throw TypeError(a.op() + "(): expected Tensors, got " + type_name(v));
            ts.push_back(v.tensor);
        }
        return ember::broadcast_tensors(ts);
    });
    def(t, "narrow", "input, dim, start, length", [](const Args& a) {
        return one(a.tensor("input").narrow(a.integer("dim"), a.integer("start"), a.integer("length")));
    });
    def(t, "select", "input, dim, index", [](const Args& a) {
        return one(a.tensor("input").select(a.integer("dim"), a.integer("index")));
    });
    def(t, "chunk", "input, chunks, dim=0", [](const Args& a) {
        return a.tensor("input").chunk(a.integer("chunks"), a.integer("dim"));
    });
    def(t, "split", "tensor, split_size_or_sections, dim=0", [](const Args& a) {
        Tensor x = a.tensor("tensor");
        if (a["split_size_or_sections"].kind == Value::Kind::Int) {
            return x.split(a.integer("split_size_or_sections"), a.integer("dim"));
        }
        return x.split(a.ints("split_size_or_sections"), a.integer("dim"));
    });
    def(t, "split_with_sizes", "input, split_sizes, dim=0", [](const Args& a) {
        return a.tensor("input").split_with_sizes(a.ints("split_sizes"), a.integer("dim"));
    });
    def(t, "unbind", "input, dim=0", [](const Args& a) {
        return a.tensor("input").unbind(a.integer("dim"));
    });
    def(t, "diagonal", "input, offset=0, dim1=0, dim2=1", [](const Args& a) {
        return one(a.tensor("input").diagonal(a.integer("offset"), a.integer("dim1"), a.integer("dim2")));
    });
    def(t, "cat", "tensors, dim=0, *, axis=None, out=None", [](const Args& a) {
        int64_t dim = a.is_none("axis") ? a.integer("dim") : a.integer("axis");
        return one(to_out(a, ember::cat(a.tensors("tensors"), dim)));
    });
    def(t, "stack", "tensors, dim=0, *, out=None", [](const Args& a) {
        return one(to_out(a, ember::stack(a.tensors("tensors"), a.integer("dim"))));
    });
    def(t, "Tensor.repeat", "input, repeats", [](const Args& a) {
        return one(a.tensor("input").repeat(a.ints("repeats")));
    });
    def(t, "tile", "input, dims", [](const Args& a) {
        Tensor x = a.tensor("input");
        std::vector<int64_t> dims = a.ints("dims");
        if (static_cast<int64_t>(dims.size()) < x.dim()) {
            dims.insert(dims.begin(), static_cast<std::size_t>(x.dim()) - dims.size(), 1);
        }
        return one(x.repeat(dims));
    });
    def(t, "tril", "input, diagonal=0", [](const Args& a) {
        return one(a.tensor("input").tril(a.integer("diagonal")));
    });
    def(t, "triu", "input, diagonal=0", [](const Args& a) {
        return one(a.tensor("input").triu(a.integer("diagonal")));
    });
    def(t, "tril_", "input, diagonal=0", [](const Args& a) {
        Tensor x = a.tensor("input");
        return one(write_into(x, x.tril(a.integer("diagonal")), a.op()));
    });
    def(t, "triu_", "input, diagonal=0", [](const Args& a) {
        Tensor x = a.tensor("input");
        return one(write_into(x, x.triu(a.integer("diagonal")), a.op()));
    });
    def(t, "flip", "input, dims", [](const Args& a) {
        return one(a.tensor("input").flip(a.ints("dims")));
    });
    def(t, "Tensor.contiguous", "self, *, memory_format=ember.contiguous_format", [](const Args& a) {
        return one(a.tensor("self").contiguous());
    });
    def(t, "clone", "input, *, memory_format=ember.preserve_format", [](const Args& a) {
        return one(a.tensor("input").clone());
    });
    def(t, "detach", "input", [](const Args& a) { return one(a.tensor("input").detach()); });
    def(t, "Tensor.detach", "self", [](const Args& a) { return one(a.tensor("self").detach()); });
    def(t, "as_strided", "input, size, stride, storage_offset=None", [](const Args& a) {
        return one(a.tensor("input").as_strided(a.ints("size"), a.ints("stride"), a.optional_integer("storage_offset")));
    });
}

}  // namespace ember::jit::detail
