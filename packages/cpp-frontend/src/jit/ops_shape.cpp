// Shape ops of the C++ op table: views (reshape, view, permute, transpose, expand, narrow,
// select, chunk, split, unbind, ...) share their input's memory as in Python, so a later
// in-place op writes through them; joins (cat, stack) and copies (repeat, flip, ...).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <sstream>

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
    if (a[name].kind == Value::Kind::Dtype || (a.has("dtype") && !a.is_none("dtype"))) {
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

// The tensors of a `*tensors` op: f(a, b) or f([a, b]).
std::vector<Tensor> var_tensors(const Args& a) {
    std::vector<Tensor> out;
    for (const Value& v : a.varargs()) {
        if (v.is_tensor()) {
            out.push_back(v.tensor);
        } else if (v.is_sequence()) {
            for (const Value& item : v.items) {
                if (!item.is_tensor()) throw TypeError(a.op() + "(): expected a tensor, got " + describe(item));
                out.push_back(item.tensor);
            }
        } else {
            throw TypeError(a.op() + "(): expected a tensor, got " + describe(v));
        }
    }
    return out;
}

Tensor atleast(const Tensor& x, int64_t n) {
    if (x.dim() >= n) return x;
    if (x.dim() == 0) return x.reshape(std::vector<int64_t>(static_cast<std::size_t>(n), 1));
    if (n == 2) return x.unsqueeze(0);                       // (k) -> (1, k)
    if (x.dim() == 1) return x.unsqueeze(0).unsqueeze(2);    // (k) -> (1, k, 1)
    return x.unsqueeze(2);                                   // (m, k) -> (m, k, 1)
}

OpResult atleast_op(const Args& a, int64_t n) {
    std::vector<Tensor> xs = var_tensors(a);
    OpResult out;
    for (const Tensor& x : xs) out.push_back(atleast(x, n));
    return out;
}

// tensor_split's pieces: `sections` equal-as-possible parts, or the parts between `indices`.
OpResult split_at(const Tensor& x, int64_t dim, const Value& how, const std::string& op, bool even) {
    const int64_t d = dim_index(dim, x.dim(), op);
    const int64_t n = x.size(d);
    OpResult out;
    if (how.kind == Value::Kind::Int) {
        const int64_t sections = how.i;
        if (sections <= 0) throw Error(op + "(): number of sections must be larger than 0, got " + std::to_string(sections));
        if (even && n % sections != 0) {
            throw Error(op + "(): torch." + op + " attempted to split along dimension " + std::to_string(d) +
                        ", but the size of the dimension " + std::to_string(n) +
                        " is not divisible by the split_size " + std::to_string(sections) + "!");
        }
        int64_t start = 0;
        for (int64_t k = 0; k < sections; ++k) {
            const int64_t len = n / sections + (k < n % sections ? 1 : 0);
            out.push_back(x.narrow(d, start, len));
            start += len;
        }
        return out;
    }
    std::vector<int64_t> idx;
    if (how.is_tensor()) {
        Tensor t = how.tensor.to(kLong).contiguous().reshape({-1});
        idx.assign(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
    } else {
        for (const Value& v : how.items) idx.push_back(v.i);
    }
    int64_t start = 0;
    idx.push_back(n);
    for (int64_t stop : idx) {
        if (stop < 0) stop += n;
        stop = std::min(std::max(stop, start), n);
        out.push_back(x.narrow(d, std::min(start, n), stop - std::min(start, n)));
        start = std::max(start, stop);
    }
    return out;
}

const Value& sections_arg(const Args& a) {
    for (const char* name : {"indices_or_sections", "sections", "indices", "tensor_indices_or_sections"}) {
        if (a.has(name) && !a.is_none(name)) return a[name];
    }
    throw TypeError(a.op() + "() missing required argument 'indices_or_sections'");
}

Tensor long_vector(const std::vector<int64_t>& v) {
    Tensor t = ember::empty({static_cast<int64_t>(v.size())}, kLong);
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    return t;
}

Tensor roll(Tensor x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims, const std::string& op) {
    if (dims.empty()) {
        if (shifts.size() != 1) throw Error(op + "(): shifts and dimensions must align. shifts: " +
                                            std::to_string(shifts.size()) + ", dims:0");
        return roll(x.reshape({-1}), shifts, {0}, op).reshape(x.sizes());
    }
    if (shifts.size() != dims.size()) {
        throw Error(op + "(): shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) +
                    ", dims:" + std::to_string(dims.size()));
    }
    for (std::size_t k = 0; k < dims.size(); ++k) {
        const int64_t d = wrap_dim(dims[k], x.dim(), op);
        const int64_t n = x.size(d);
        if (n == 0) continue;
        const int64_t s = ((shifts[k] % n) + n) % n;
        if (s == 0) continue;
        x = ember::cat({x.narrow(d, n - s, s), x.narrow(d, 0, n - s)}, d);
    }
    return x;
}

}  // namespace

void register_shape_ops(OpTable& t) {
    def(t, "reshape", "input, shape", [](const Args& a) {
        return one(a.tensor("input").reshape(a.ints("shape")));
    });
    def(t, "Tensor.view", "input, size=None, dtype=None", [](const Args& a) {
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

    // ---- more joins, splits, flips and rolls
    def(t, "atleast_1d", "*tensors", [](const Args& a) { return atleast_op(a, 1); });
    def(t, "atleast_2d", "*tensors", [](const Args& a) { return atleast_op(a, 2); });
    def(t, "atleast_3d", "*tensors", [](const Args& a) { return atleast_op(a, 3); });
    def(t, "hstack", "tensors, *, out=None", [](const Args& a) {
        std::vector<Tensor> xs = a.tensors("tensors");
        for (Tensor& x : xs) x = atleast(x, 1);
        const int64_t dim = !xs.empty() && xs[0].dim() == 1 ? 0 : 1;
        return one(to_out(a, ember::cat(xs, dim)));
    });
    def(t, "vstack", "tensors, *, out=None", [](const Args& a) {
        std::vector<Tensor> xs = a.tensors("tensors");
        for (Tensor& x : xs) x = atleast(x, 2);
        return one(to_out(a, ember::cat(xs, 0)));
    });
    def(t, "dstack", "tensors, *, out=None", [](const Args& a) {
        std::vector<Tensor> xs = a.tensors("tensors");
        for (Tensor& x : xs) x = atleast(x, 3);
        return one(to_out(a, ember::cat(xs, 2)));
    });
    def(t, "column_stack", "tensors, *, out=None", [](const Args& a) {
        std::vector<Tensor> xs = a.tensors("tensors");
        for (Tensor& x : xs) {
            if (x.dim() <= 1) x = x.reshape({x.numel(), 1});
        }
        return one(to_out(a, ember::cat(xs, 1)));
    });
    def(t, "tensor_split",
        "input, indices_or_sections=None, dim=0, *, sections=None, indices=None, tensor_indices_or_sections=None",
        [](const Args& a) { return split_at(a.tensor("input"), a.integer("dim"), sections_arg(a), a.op(), false); });
    const char* hsplit_signature = "input, indices_or_sections=None, *, sections=None, indices=None";
    def(t, "hsplit", hsplit_signature, [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.dim() < 1) throw Error("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!");
        return split_at(x, x.dim() == 1 ? 0 : 1, sections_arg(a), "hsplit", true);
    });
    def(t, "vsplit", hsplit_signature, [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.dim() < 2) throw Error("torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with " + std::to_string(x.dim()) + " dimensions!");
        return split_at(x, 0, sections_arg(a), "vsplit", true);
    });
    def(t, "dsplit", hsplit_signature, [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.dim() < 3) throw Error("torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with " + std::to_string(x.dim()) + " dimensions!");
        return split_at(x, 2, sections_arg(a), "dsplit", true);
    });
    alias(t, "unsafe_chunk", "chunk");
    def(t, "unsafe_split", "input, split_size, dim=0", [](const Args& a) {
        return a.tensor("input").split(a.integer("split_size"), a.integer("dim"));
    });
    def(t, "roll", "input, shifts, dims=None", [](const Args& a) {
        return one(roll(a.tensor("input"), a.ints("shifts"), dims_of(a, "dims"), a.op()).contiguous());
    });
    def(t, "rot90", "input, k=1, dims=(0, 1)", [](const Args& a) {
        Tensor x = a.tensor("input");
        std::vector<int64_t> dims = a.ints("dims");
        if (dims.size() != 2) throw Error("expected total rotation dims == 2, but got dims = " + std::to_string(dims.size()));
        const int64_t d0 = wrap_dim(dims[0], x.dim(), a.op()), d1 = wrap_dim(dims[1], x.dim(), a.op());
        if (d0 == d1) throw Error("expected rotation dims to be different, but got dim0 = " + std::to_string(d0) + " and dim1 = " + std::to_string(d1));
        const int64_t k = ((a.integer("k") % 4) + 4) % 4;
        if (k == 1) return one(x.flip({d1}).transpose(d0, d1).contiguous());
        if (k == 2) return one(x.flip({d0, d1}));
        if (k == 3) return one(x.flip({d0}).transpose(d0, d1).contiguous());
        return one(x.clone());
    });
    def(t, "fliplr", "input", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.dim() < 2) throw Error("Input must be >= 2-d.");
        return one(x.flip({1}));
    });
    def(t, "flipud", "input", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.dim() < 1) throw Error("Input must be >= 1-d.");
        return one(x.flip({0}));
    });
    def(t, "diag", "input, diagonal=0", [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t k = a.integer("diagonal");
        if (x.dim() == 2) return one(x.diagonal(k, 0, 1).clone());
        if (x.dim() != 1) throw Error("diag(): Supports 1D or 2D tensors. Got " + std::to_string(x.dim()) + "D");
        const int64_t n = x.size(0) + (k >= 0 ? k : -k);
        Tensor out = ember::zeros({n, n}, x.scalar_type());
        out.diagonal(k, 0, 1).copy_(x);
        return one(out);
    });
    def(t, "diagflat", "input, offset=0", [](const Args& a) {
        Tensor x = a.tensor("input").reshape({-1});
        const int64_t k = a.integer("offset");
        const int64_t n = x.size(0) + (k >= 0 ? k : -k);
        Tensor out = ember::zeros({n, n}, x.scalar_type());
        out.diagonal(k, 0, 1).copy_(x);
        return one(out);
    });
    def(t, "diag_embed", "input, offset=0, dim1=-2, dim2=-1", [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t k = a.integer("offset");
        const int64_t nd = x.dim() + 1;
        const int64_t d1 = wrap_dim(a.integer("dim1"), nd, a.op()), d2 = wrap_dim(a.integer("dim2"), nd, a.op());
        if (d1 == d2) throw Error("diag_embed(): diagonal dimensions cannot be identical " + std::to_string(d1) + ", " + std::to_string(d2));
        const int64_t n = x.size(-1) + (k >= 0 ? k : -k);
        std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
        shape.insert(shape.begin() + std::min(d1, d2), n);
        shape.insert(shape.begin() + std::max(d1, d2), n);
        Tensor out = ember::zeros(shape, x.scalar_type());
        // the diagonal view puts its dim last, as x's last dim
        out.diagonal(k, d1, d2).copy_(x);
        return one(out);
    });
    def(t, "trace", "input", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.dim() != 2) throw Error("trace: expected a matrix, but got tensor with dim " + std::to_string(x.dim()));
        return one(ember::sum(x.diagonal(0, 0, 1)));
    });
    auto tri_indices = [&t](const char* name, bool lower) {
        def(t, name, "row, col, offset=0, *, dtype=None, device=None, layout=None", [lower](const Args& a) {
            const int64_t rows = a.integer("row"), cols = a.integer("col"), offset = a.integer("offset");
            std::vector<int64_t> r, c;
            for (int64_t i = 0; i < rows; ++i) {
                for (int64_t j = 0; j < cols; ++j) {
                    if (lower ? j - i <= offset : j - i >= offset) {
                        r.push_back(i);
                        c.push_back(j);
                    }
                }
            }
            Tensor out = ember::stack({long_vector(r), long_vector(c)}, 0);
            std::optional<ScalarType> dtype = a.dtype("dtype");
            return one(dtype ? out.to(*dtype) : out);
        });
    };
    tri_indices("tril_indices", true);
    tri_indices("triu_indices", false);
    def(t, "meshgrid", "*tensors, indexing=None", [](const Args& a) {
        std::vector<Tensor> xs = var_tensors(a);
        const std::string indexing = a.is_none("indexing") ? "ij" : a.string("indexing");
        if (indexing != "ij" && indexing != "xy") {
            throw Error("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: " + indexing);
        }
        const bool xy = indexing == "xy" && xs.size() >= 2;
        if (xy) std::swap(xs[0], xs[1]);
        std::vector<int64_t> shape;
        for (const Tensor& x : xs) shape.push_back(x.numel());
        OpResult out;
        for (std::size_t k = 0; k < xs.size(); ++k) {
            std::vector<int64_t> view(xs.size(), 1);
            view[k] = -1;
            out.push_back(xs[k].reshape(view).expand(shape));
        }
        if (xy) std::swap(out[0], out[1]);  // "xy": the grids of the first two swapped back
        return out;
    });
    def(t, "kron", "input, other", [](const Args& a) {
        Tensor x = a.tensor("input"), y = a.tensor("other");
        const int64_t nd = std::max(x.dim(), y.dim());
        std::vector<int64_t> xs(static_cast<std::size_t>(nd - x.dim()), 1), ys(static_cast<std::size_t>(nd - y.dim()), 1);
        xs.insert(xs.end(), x.sizes().begin(), x.sizes().end());
        ys.insert(ys.end(), y.sizes().begin(), y.sizes().end());
        std::vector<int64_t> xv, yv, out;
        for (int64_t d = 0; d < nd; ++d) {
            xv.insert(xv.end(), {xs[d], 1});
            yv.insert(yv.end(), {1, ys[d]});
            out.push_back(xs[d] * ys[d]);
        }
        return one((x.reshape(xv) * y.reshape(yv)).reshape(out));
    });
    def(t, "inner", "input, other", [](const Args& a) {
        Tensor x = a.tensor("input"), y = a.tensor("other");
        if (x.dim() == 0 || y.dim() == 0) return one(x * y);
        const int64_t k = x.size(-1);
        if (y.size(-1) != k) {
            std::ostringstream os;
            os << "inner() the last dimension must match on both input tensors but got shapes " << x.sizes() << " and "
               << y.sizes();
            throw Error(os.str());
        }
        std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
        shape.insert(shape.end(), y.sizes().begin(), y.sizes().end() - 1);
        return one(ember::matmul(x.reshape({-1, k}), y.reshape({-1, k}).t()).reshape(shape));
    });
    def(t, "diff", "input, n=1, dim=-1, prepend=None, append=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t d = wrap_dim(a.integer("dim"), x.dim(), a.op());
        std::vector<Tensor> parts;
        if (!a.is_none("prepend")) parts.push_back(a.tensor("prepend"));
        parts.push_back(x);
        if (!a.is_none("append")) parts.push_back(a.tensor("append"));
        if (parts.size() > 1) x = ember::cat(parts, d);
        for (int64_t k = a.integer("n"); k > 0 && x.size(d) > 0; --k) {
            const int64_t m = x.size(d) - 1;
            Tensor hi = x.narrow(d, 1, m), lo = x.narrow(d, 0, m);
            x = x.scalar_type() == kBool ? ember::logical_xor(hi, lo) : hi - lo;
        }
        return one(x.contiguous());
    });
    def(t, "repeat_interleave", "input, repeats=None, dim=None, *, output_size=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.is_none("repeats")) {  // repeat_interleave(repeats): arange(n) repeated
            Tensor reps = x.to(kLong).contiguous().reshape({-1});
            std::vector<int64_t> idx;
            for (int64_t i = 0; i < reps.numel(); ++i) idx.insert(idx.end(), static_cast<std::size_t>(reps.data_ptr<int64_t>()[i]), i);
            return one(long_vector(idx));
        }
        int64_t d = 0;
        if (a.is_none("dim")) x = x.reshape({-1});
        else d = wrap_dim(a.integer("dim"), x.dim(), a.op());
        const int64_t n = x.dim() == 0 ? 1 : x.size(d);
        if (x.dim() == 0) x = x.reshape({1});
        std::vector<int64_t> reps;
        if (a["repeats"].is_tensor()) {
            Tensor r = a.tensor("repeats").to(kLong).contiguous().reshape({-1});
            reps.assign(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
        } else {
            reps.push_back(a.integer("repeats"));
        }
        if (reps.size() == 1) reps.assign(static_cast<std::size_t>(n), reps[0]);
        if (static_cast<int64_t>(reps.size()) != n) throw Error("repeats must have the same size as input along dim");
        std::vector<int64_t> idx;
        for (int64_t i = 0; i < n; ++i) {
            if (reps[i] < 0) throw Error("repeats can not be negative");
            idx.insert(idx.end(), static_cast<std::size_t>(reps[i]), i);
        }
        return one(ember::index_select(x, d, long_vector(idx)));
    });

    def(t, "Tensor.unfold", "input, dimension, size, step", [](const Args& a) {
        // the windows as a view: dim `dimension` becomes the window count, a new last dim the window
        Tensor x = a.tensor("input");
        const int64_t nd = x.dim();
        const int64_t d = wrap_dim(a.integer("dimension"), nd, "unfold");
        const int64_t size = a.integer("size"), step = a.integer("step");
        const int64_t n = nd == 0 ? 1 : x.size(d);
        if (size > n) {
            throw Error("maximum size for tensor at dimension " + std::to_string(d) + " is " + std::to_string(n) +
                        " but size is " + std::to_string(size));
        }
        if (step <= 0) throw Error("step is " + std::to_string(step) + " but must be > 0");
        std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end()), strides(x.strides().begin(), x.strides().end());
        if (nd == 0) return one(x.as_strided({1}, {1}));
        const int64_t stride = strides[static_cast<std::size_t>(d)];
        sizes[static_cast<std::size_t>(d)] = (n - size) / step + 1;
        strides[static_cast<std::size_t>(d)] = stride * step;
        sizes.push_back(size);
        strides.push_back(stride);
        return one(x.as_strided(sizes, strides));
    });
    def(t, "tensordot", "a, b, dims=2, out=None", [](const Args& a) {
        Tensor x = a.tensor("a"), y = a.tensor("b");
        std::vector<int64_t> dx, dy;
        const Value& dims = a["dims"];
        if (dims.kind == Value::Kind::Int) {
            for (int64_t k = 0; k < dims.i; ++k) {
                dx.push_back(x.dim() - dims.i + k);
                dy.push_back(k);
            }
        } else if (dims.is_sequence() && dims.items.size() == 2) {
            auto as_list = [](const Value& v) {
                std::vector<int64_t> out;
                if (v.kind == Value::Kind::Int) out.push_back(v.i);
                else for (const Value& i : v.items) out.push_back(i.i);
                return out;
            };
            dx = as_list(dims.items[0]);
            dy = as_list(dims.items[1]);
        } else {
            throw TypeError("tensordot expects dims to be an int or a pair of lists of dims");
        }
        if (dx.size() != dy.size()) throw Error("both dimension lists should have same length");
        for (auto& d : dx) d = wrap_dim(d, x.dim(), "tensordot");
        for (auto& d : dy) d = wrap_dim(d, y.dim(), "tensordot");
        std::vector<int64_t> px, py, out_shape;
        int64_t m = 1, n = 1, k = 1;
        for (int64_t d = 0; d < x.dim(); ++d) {
            if (std::find(dx.begin(), dx.end(), d) == dx.end()) {
                px.push_back(d);
                out_shape.push_back(x.size(d));
                m *= x.size(d);
            }
        }
        for (int64_t d : dx) {
            px.push_back(d);
            k *= x.size(d);
        }
        for (int64_t d : dy) py.push_back(d);
        for (int64_t d = 0; d < y.dim(); ++d) {
            if (std::find(dy.begin(), dy.end(), d) == dy.end()) {
                py.push_back(d);
                out_shape.push_back(y.size(d));
                n *= y.size(d);
            }
        }
        Tensor r = ember::matmul(x.permute(px).reshape({m, k}), y.permute(py).reshape({k, n}));
        return one(to_out(a, r.reshape(out_shape)));
    });
    def(t, "block_diag", "*tensors", [](const Args& a) {
        std::vector<Tensor> xs = var_tensors(a);
        int64_t rows = 0, cols = 0;
        std::vector<Tensor> mats;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            Tensor x = xs[i];
            if (x.dim() > 2) {
                throw Error("torch.block_diag: Input tensors must have 2 or fewer dimensions. Input " + std::to_string(i) +
                            " has " + std::to_string(x.dim()) + " dimensions");
            }
            if (x.dim() == 0) x = x.reshape({1, 1});
            else if (x.dim() == 1) x = x.reshape({1, -1});
            rows += x.size(0);
            cols += x.size(1);
            mats.push_back(x);
        }
        const ScalarType dt = mats.empty() ? get_default_dtype() : ember::result_type(TensorList(mats));
        Tensor out = ember::zeros({rows, cols}, dt);
        int64_t r = 0, c = 0;
        for (const Tensor& x : mats) {
            out.narrow(0, r, x.size(0)).narrow(1, c, x.size(1)).copy_(x);
            r += x.size(0);
            c += x.size(1);
        }
        return one(out);
    });
    def(t, "cartesian_prod", "*tensors", [](const Args& a) {
        std::vector<Tensor> xs = var_tensors(a);
        if (xs.size() == 1) return one(xs[0]);
        std::vector<int64_t> shape;
        for (const Tensor& x : xs) shape.push_back(x.numel());
        std::vector<Tensor> cols;
        for (std::size_t k = 0; k < xs.size(); ++k) {
            std::vector<int64_t> view(xs.size(), 1);
            view[k] = -1;
            cols.push_back(xs[k].reshape(view).expand(shape).reshape({-1}));
        }
        return one(ember::stack(cols, 1));
    });
}

}  // namespace ember::jit::detail
