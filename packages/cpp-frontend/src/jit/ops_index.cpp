// Indexing ops of the C++ op table: getitem/setitem (Python's x[index] and x[index] = v, basic
// indices giving views), gathers and scatters, embedding.
#include "ember/error.h"
#include "ember/indexing.h"
#include "ember/nn/functional.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

using indexing::TensorIndex;

// A (nested) list of ints or bools as an index tensor (int64 or bool), as NumPy and
// PyTorch turn x[[0, 2]] into advanced indexing.
void flatten_list(const Value& v, std::size_t depth, std::vector<int64_t>& shape, std::vector<const Value*>& leaves,
                  const std::string& op) {
    if (v.kind != Value::Kind::List && v.kind != Value::Kind::Tuple) {
        if (depth != shape.size()) throw IndexError(op + ": a list index must be rectangular (all rows the same length)");
        leaves.push_back(&v);
        return;
    }
    const auto n = static_cast<int64_t>(v.items.size());
    if (depth == shape.size()) {
        if (!leaves.empty()) throw IndexError(op + ": a list index must be rectangular (all rows the same length)");
        shape.push_back(n);
    } else if (depth > shape.size() || shape[depth] != n) {
        throw IndexError(op + ": a list index must be rectangular (all rows the same length)");
    }
    for (const Value& item : v.items) flatten_list(item, depth + 1, shape, leaves, op);
}

Tensor list_index(const Value& v, const std::string& op) {
    std::vector<int64_t> shape;
    std::vector<const Value*> leaves;
    flatten_list(v, 0, shape, leaves, op);
    // bools keep their dtype; other numbers become int64 (floats truncated), as PyTorch
    bool all_bool = !leaves.empty();
    for (const Value* leaf : leaves) {
        if (!leaf->is_number()) {
            throw IndexError(op + ": tensors used as indices must be long, int, byte or bool tensors (a list index "
                             "holds " + std::string(type_name(*leaf)) + ")");
        }
        all_bool = all_bool && leaf->kind == Value::Kind::Bool;
    }
    Tensor out = ember::empty(shape, all_bool ? kBool : kLong);
    for (std::size_t k = 0; k < leaves.size(); ++k) {
        const Value& v = *leaves[k];
        if (all_bool) out.data_ptr<bool>()[k] = v.b;
        else out.data_ptr<int64_t>()[k] = v.kind == Value::Kind::Bool ? v.b : v.kind == Value::Kind::Float ? static_cast<int64_t>(v.f) : v.i;
    }
    return out;
}

std::optional<int64_t> slice_part(const Value& v, const std::string& op) {
    if (v.is_none()) return std::nullopt;
    return to_int(v, op + ": a slice bound");
}

TensorIndex one_index(const Value& v, const std::string& op) {
    switch (v.kind) {
        case Value::Kind::None: return TensorIndex(indexing::None);
        case Value::Kind::Ellipsis: return TensorIndex(indexing::Ellipsis);
        case Value::Kind::Bool: return TensorIndex(v.b);
        case Value::Kind::Int: return TensorIndex(v.i);
        case Value::Kind::Tensor: return TensorIndex(v.tensor);
        case Value::Kind::Slice:
            return TensorIndex(indexing::Slice(slice_part(v.items.at(0), op), slice_part(v.items.at(1), op),
                                               slice_part(v.items.at(2), op)));
        case Value::Kind::List: return TensorIndex(list_index(v, op));
        default:
            throw IndexError(op + ": only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             "valid indices (got " + std::string(type_name(v)) + ")");
    }
}

// PyTorch's rule: a tuple is a tuple of indices, and so is, for legacy's sake, a list of
// fewer than 32 items holding tensors, sequences, slices, None or Ellipsis
// (x[[0, slice(None)]] is x[0, :], x[[[0, 1], [2, 3]]] is x[[0, 1], [2, 3]]).
bool sequence_as_tuple(const Value& index) {
    if (index.kind == Value::Kind::Tuple) return true;
    if (index.kind != Value::Kind::List || index.items.size() >= 32) return false;
    for (const Value& it : index.items) {
        switch (it.kind) {
            case Value::Kind::Tensor:
            case Value::Kind::Slice:
            case Value::Kind::None:
            case Value::Kind::Ellipsis:
            case Value::Kind::List:
            case Value::Kind::Tuple: return true;
            default: break;
        }
    }
    return false;
}

std::vector<TensorIndex> indices_of(const Value& index, const std::string& op) {
    std::vector<TensorIndex> out;
    if (sequence_as_tuple(index)) {
        for (const Value& item : index.items) out.push_back(one_index(item, op));
    } else {
        out.push_back(one_index(index, op));
    }
    return out;
}

// scatter's source: a tensor, or a number (positional `src` or keyword `value`).
template <typename WithTensor, typename WithScalar>
Tensor scatter_source(const Args& a, WithTensor with_tensor, WithScalar with_scalar) {
    if (!a.is_none("reduce")) {
        throw NotImplementedError(a.op() + "(reduce=" + describe(a["reduce"]) +
                                  "): scatter with a reduction is not supported by Ember's C++ frontend");
    }
    if (!a.is_none("src")) {
        if (a["src"].is_tensor()) return with_tensor(a.tensor("src"));
        return with_scalar(a.scalar("src"));
    }
    if (!a.is_none("value")) return with_scalar(a.scalar("value"));
    throw TypeError(a.op() + "() missing required argument: 'src' (or 'value')");
}

std::vector<std::optional<Tensor>> optional_tensors(const Args& a, const char* name) {
    const Value& v = a[name];
    if (!v.is_sequence()) a.type_error(name, "a sequence of Tensors");
    std::vector<std::optional<Tensor>> out;
    for (const Value& item : v.items) {
        if (item.is_none()) out.emplace_back(std::nullopt);
        else if (item.is_tensor()) out.emplace_back(item.tensor);
        else a.type_error(name, "a sequence of Tensors");
    }
    return out;
}

}  // namespace

void register_index_ops(OpTable& t) {
    def(t, "getitem", "self, index", [](const Args& a) {
        return one(a.tensor("self").index(indices_of(a["index"], "getitem")));
    });
    def(t, "setitem", "self, index, value", [](const Args& a) {
        Tensor self = a.tensor("self");
        std::vector<TensorIndex> idx = indices_of(a["index"], "setitem");
        if (a["value"].is_tensor()) self.index_put_(idx, a.tensor("value"));
        else self.index_put_(idx, a.scalar("value"));
        return one(self);
    });
    def(t, "index_select", "input, dim, index", [](const Args& a) {
        return one(a.tensor("input").index_select(a.integer("dim"), a.tensor("index")));
    });
    alias(t, "Tensor.index_select", "index_select");
    def(t, "gather", "input, dim, index, *, sparse_grad=False", [](const Args& a) {
        return one(a.tensor("input").gather(a.integer("dim"), a.tensor("index")));
    });
    const char* scatter_signature = "input, dim, index, src=None, value=None, *, reduce=None";
    def(t, "scatter", scatter_signature, [](const Args& a) {
        Tensor x = a.tensor("input");
        int64_t dim = a.integer("dim");
        Tensor index = a.tensor("index");
        return one(scatter_source(
            a, [&](const Tensor& src) { return x.scatter(dim, index, src); },
            [&](const Scalar& v) { return x.scatter(dim, index, v); }));
    });
    def(t, "scatter_", scatter_signature, [](const Args& a) {
        Tensor x = a.tensor("input");
        int64_t dim = a.integer("dim");
        Tensor index = a.tensor("index");
        scatter_source(
            a, [&](const Tensor& src) { return x.scatter_(dim, index, src); },
            [&](const Scalar& v) { return x.scatter_(dim, index, v); });
        return one(x);
    });
    def(t, "scatter_add", "input, dim, index, src", [](const Args& a) {
        return one(a.tensor("input").scatter_add(a.integer("dim"), a.tensor("index"), a.tensor("src")));
    });
    def(t, "scatter_add_", "input, dim, index, src", [](const Args& a) {
        Tensor x = a.tensor("input");
        x.scatter_add_(a.integer("dim"), a.tensor("index"), a.tensor("src"));
        return one(x);
    });
    def(t, "index_add", "input, dim, index, source, *, alpha=1", [](const Args& a) {
        return one(a.tensor("input").index_add(a.integer("dim"), a.tensor("index"), a.tensor("source"), a.scalar("alpha")));
    });
    def(t, "index_add_", "input, dim, index, source, *, alpha=1", [](const Args& a) {
        Tensor x = a.tensor("input");
        x.index_add_(a.integer("dim"), a.tensor("index"), a.tensor("source"), a.scalar("alpha"));
        return one(x);
    });
    def(t, "index_put", "input, indices, values, accumulate=False", [](const Args& a) {
        return one(a.tensor("input").index_put(optional_tensors(a, "indices"), a.tensor("values"), a.boolean("accumulate")));
    });
    def(t, "index_put_", "input, indices, values, accumulate=False", [](const Args& a) {
        Tensor x = a.tensor("input");
        x.index_put_(optional_tensors(a, "indices"), a.tensor("values"), a.boolean("accumulate"));
        return one(x);
    });
    def(t, "masked_select", "input, mask", [](const Args& a) {
        return one(a.tensor("input").masked_select(a.tensor("mask")));
    });
    def(t, "nonzero", "input, *, as_tuple=False", [](const Args& a) -> OpResult {
        Tensor nz = a.tensor("input").nonzero();
        if (a.boolean("as_tuple")) return nz.unbind(1);
        return one(nz);
    });
    def(t, "take_along_dim", "input, indices, dim=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        Tensor idx = a.tensor("indices");
        if (a.is_none("dim")) return one(x.reshape({-1}).gather(0, idx.reshape({-1})));
        int64_t dim = a.integer("dim");
        // broadcast all dims but `dim`, as PyTorch does
        std::vector<int64_t> xs(x.sizes().begin(), x.sizes().end()), is(idx.sizes().begin(), idx.sizes().end());
        const int64_t d = dim < 0 ? dim + x.dim() : dim;
        xs[static_cast<std::size_t>(d)] = 1;
        is[static_cast<std::size_t>(d)] = 1;
        std::vector<int64_t> shape = infer_size(xs, is);
        std::vector<int64_t> xshape = shape, ishape = shape;
        xshape[static_cast<std::size_t>(d)] = x.size(d);
        ishape[static_cast<std::size_t>(d)] = idx.size(d);
        return one(x.expand(xshape).gather(d, idx.expand(ishape)));
    });
    def(t, "one_hot", "input, num_classes=-1", [](const Args& a) {
        return one(ember::one_hot(a.tensor("input"), a.integer("num_classes")));
    });
    alias(t, "nn.functional.one_hot", "one_hot");
    // the registry's embedding (aten's argument order) and F.embedding
    def(t, "embedding", "weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False", [](const Args& a) {
        int64_t padding_idx = a.integer("padding_idx");
        std::optional<int64_t> pad;
        if (padding_idx >= 0) pad = padding_idx;
        return one(nn::functional::embedding(a.tensor("indices"), a.tensor("weight"), pad));
    });
    def(t, "nn.functional.embedding",
        "input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False",
        [](const Args& a) {
            if (!a.is_none("max_norm")) {
                throw NotImplementedError("embedding(max_norm=...): renormalizing rows is not supported by Ember's C++ "
                                          "frontend");
            }
            std::optional<int64_t> pad = a.optional_integer("padding_idx");
            if (pad && *pad < 0) *pad += a.tensor("weight").size(0);
            return one(nn::functional::embedding(a.tensor("input"), a.tensor("weight"), pad));
        });

    // ---- more gathers and scatters
    def(t, "take", "input, index", [](const Args& a) {
        Tensor x = a.tensor("input").reshape({-1});
        Tensor index = a.tensor("index");
        const int64_t n = x.numel();
        Tensor idx = index.to(kLong).contiguous();
        Tensor wrapped = ember::where(idx < 0, idx + n, idx);
        if (wrapped.numel() && (ember::any(wrapped < 0).item<bool>() || ember::any(wrapped >= n).item<bool>())) {
            throw IndexError("out of range: tried to access index out of range of a tensor of " + std::to_string(n) + " elements");
        }
        return one(ember::index_select(x, 0, wrapped.reshape({-1})).reshape(index.sizes()));
    });
    def(t, "argwhere", "input", [](const Args& a) { return one(ember::nonzero(a.tensor("input"))); });
    auto index_fill = [](const Args& a) {
        Tensor x = a.tensor("input").clone();
        const int64_t d = dim_index(a.integer("dim"), x.dim(), a.op());
        Tensor index = a.tensor("index").to(kLong).reshape({-1});
        Tensor view = x.dim() == 0 ? x.reshape({1}) : x;
        Tensor chosen = ember::index_select(view, d, index);
        if (a["value"].is_tensor()) chosen.fill_(a.tensor("value"));
        else chosen.fill_(a.scalar("value"));
        std::vector<std::optional<Tensor>> at(static_cast<std::size_t>(d) + 1);
        at[static_cast<std::size_t>(d)] = index;
        Tensor out = ember::index_put(view, at, chosen);
        return out.reshape(x.sizes());
    };
    def(t, "index_fill", "input, dim, index, value", [index_fill](const Args& a) { return one(index_fill(a)); });
    def(t, "index_fill_", "input, dim, index, value", [index_fill](const Args& a) {
        return one(write_into(a.tensor("input"), index_fill(a), a.op()));
    });
    auto index_copy = [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t d = dim_index(a.integer("dim"), x.dim(), a.op());
        Tensor index = a.tensor("index").to(kLong).reshape({-1});
        Tensor src = a.tensor("source").to(x.scalar_type());
        Tensor view = x.dim() == 0 ? x.reshape({1}) : x;
        if (src.dim() == 0) src = src.reshape({1});
        // index_put takes the indexed dims first: move dim d of the source to the front
        std::vector<std::optional<Tensor>> at(static_cast<std::size_t>(d) + 1);
        at[static_cast<std::size_t>(d)] = index;
        return ember::index_put(view, at, src).reshape(x.sizes());
    };
    def(t, "index_copy", "input, dim, index, source", [index_copy](const Args& a) { return one(index_copy(a)); });
    def(t, "index_copy_", "input, dim, index, source", [index_copy](const Args& a) {
        return one(write_into(a.tensor("input"), index_copy(a), a.op()));
    });
    def(t, "select_scatter", "input, src, dim, index", [](const Args& a) {
        Tensor out = a.tensor("input").clone();
        out.select(a.integer("dim"), a.integer("index")).copy_(a.tensor("src"));
        return one(out);
    });
    def(t, "slice_scatter", "input, src, dim=0, start=None, end=None, step=1", [](const Args& a) {
        Tensor out = a.tensor("input").clone();
        ember::slice(out, a.integer("dim"), a.optional_integer("start"), a.optional_integer("end"), a.integer("step"))
            .copy_(a.tensor("src"));
        return one(out);
    });
    def(t, "diagonal_scatter", "input, src, offset=0, dim1=0, dim2=1", [](const Args& a) {
        Tensor out = a.tensor("input").clone();
        out.diagonal(a.integer("offset"), a.integer("dim1"), a.integer("dim2")).copy_(a.tensor("src"));
        return one(out);
    });
}

}  // namespace ember::jit::detail
