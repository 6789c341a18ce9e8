#include "jit/op_table.h"

#include <optional>
#include <sstream>
#include <stdexcept>

#include "ember/error.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

void def(OpTable& table, const std::string& name, const std::string& signature,
         std::function<OpResult(const Args&)> body) {
    OpEntry entry;
    entry.name = name;
    entry.signature = Signature(signature);
    auto [it, inserted] = table.emplace(name, std::move(entry));
    if (!inserted) throw std::logic_error("ember::jit: op " + name + " registered twice");
    // the map's nodes do not move: the body may keep pointers to its signature and name
    const Signature* sig = &it->second.signature;
    const std::string* op = &it->first;
    it->second.fn = [sig, op, body = std::move(body)](const std::vector<Value>& args, const Kwargs& kwargs) {
        return body(Args(*sig, args, kwargs, *op));
    };
}

void def_raw(OpTable& table, const std::string& name, const std::string& signature, OpFn fn) {
    OpEntry entry;
    entry.name = name;
    entry.signature = Signature(signature);
    entry.fn = std::move(fn);
    if (!table.emplace(name, std::move(entry)).second) {
        throw std::logic_error("ember::jit: op " + name + " registered twice");
    }
}

void alias(OpTable& table, const std::string& alias_name, const std::string& name,
           const std::string& signature) {
    auto it = table.find(name);
    if (it == table.end()) throw std::logic_error("ember::jit: alias of unknown op " + name);
    OpEntry entry;
    entry.name = alias_name;
    entry.signature = signature.empty() ? it->second.signature : Signature(signature);
    auto [at, inserted] = table.emplace(alias_name, std::move(entry));
    if (!inserted) throw std::logic_error("ember::jit: op " + alias_name + " registered twice");
    const Signature* sig = &at->second.signature;
    const std::string* op = &at->first;
    OpFn target = it->second.fn;
    const Signature* target_sig = &it->second.signature;
    if (signature.empty()) {
        at->second.fn = target;
    } else {
        // a different parameter list over the same body: bind here, then pass by keyword
        at->second.fn = [sig, op, target, target_sig](const std::vector<Value>& args, const Kwargs& kwargs) {
            Args bound(*sig, args, kwargs, *op);
            Kwargs by_name;
            for (const Param& p : target_sig->params()) {
                if (sig->index_of(p.name) >= 0) by_name.emplace(p.name, bound[p.name]);
            }
            return target({}, by_name);
        };
    }
}

namespace {

// The dtype of the first complex tensor or number among a call's arguments, if any.
std::optional<ScalarType> complex_in(const Value& v) {
    if (v.kind == Value::Kind::Complex) return kComplexDouble;  // a Python complex is complex128
    if (v.is_tensor()) {
        if (v.tensor.defined() && v.tensor.is_complex()) return v.tensor.scalar_type();
        return std::nullopt;
    }
    for (const Value& item : v.items) {
        if (auto t = complex_in(item)) return t;
    }
    return std::nullopt;
}

// Wraps every op that does not take complex values with PyTorch's "not implemented" error.
void refuse_complex(OpTable& t) {
    for (auto& [name, entry] : t) {
        if (entry.complex_ok) continue;
        entry.fn = [fn = std::move(entry.fn), op = &name](const std::vector<Value>& args, const Kwargs& kwargs) {
            std::optional<ScalarType> c;
            for (const Value& v : args) {
                if ((c = complex_in(v))) break;
            }
            if (!c) {
                for (const auto& kv : kwargs) {
                    if ((c = complex_in(kv.second))) break;
                }
            }
            if (c) {
                throw Error("\"" + *op + "\" not implemented for '" + std::string(scalar_type_name(*c)) +
                            "' (Ember's C++ frontend runs this op on real tensors only)");
            }
            return fn(args, kwargs);
        };
    }
}

}  // namespace

const OpTable& op_table() {
    static const OpTable table = [] {
        OpTable t;
        register_pointwise_ops(t);
        register_reduction_ops(t);
        register_shape_ops(t);
        register_index_ops(t);
        register_nn_ops(t);
        register_nn_extra_ops(t);
        register_factory_ops(t);
        register_tensor_methods(t);
        register_more2_ops(t);
        register_more3_ops(t);
        register_more4_ops(t);
        register_more5_ops(t);
        register_more6_ops(t);
        register_complex_ops(t);
        refuse_complex(t);
        return t;
    }();
    return table;
}

void allow_complex(OpTable& table, const std::string& name) {
    auto it = table.find(name);
    if (it == table.end()) throw std::logic_error("ember::jit: allow_complex of unknown op " + name);
    it->second.complex_ok = true;
}

// ------------------------------------------------------------------------- helpers

Tensor wrap_number(const Scalar& s, const Tensor& like) {
    return scalar_tensor(s, result_type(like, s));
}

Tensor& write_into(const Tensor& self, const Tensor& result, const std::string& op) {
    if (result.sizes() != self.sizes()) {
        std::ostringstream os;
        os << op << ": output with shape " << self.sizes()
           << " doesn't match the broadcast shape " << result.sizes();
        throw Error(os.str());
    }
    if (!can_cast(result.scalar_type(), self.scalar_type())) {
        throw Error(std::string("result type ") + std::string(scalar_type_name(result.scalar_type())) +
                    " can't be cast to the desired output type " +
                    std::string(scalar_type_name(self.scalar_type())));
    }
    return self.copy_(result);
}

std::vector<int64_t> dims_of(const Args& a, const char* name) {
    const Value& v = a[name];
    if (v.is_none()) return {};
    return a.ints(name);
}

void def_inplace_by_copy(OpTable& t, const std::string& name) {
    const OpEntry& base = t.at(name);
    OpFn fn = base.fn;
    const std::string inplace = name + "_";
    const Signature signature = base.signature;
    const std::string first = signature.params().at(0).name;
    def_raw(t, inplace, signature.text(), [fn, inplace, signature, first](const std::vector<Value>& args, const Kwargs& kwargs) {
        Tensor self = Args(signature, args, kwargs, inplace).tensor(first);
        return one(write_into(self, fn(args, kwargs).at(0), inplace));
    });
}

int64_t dim_index(int64_t dim, int64_t ndim, const std::string& op) {
    const int64_t n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n) {
        throw IndexError(op + "(): Dimension out of range (expected to be in range of [" + std::to_string(-n) +
                         ", " + std::to_string(n - 1) + "], but got " + std::to_string(dim) + ")");
    }
    return dim < 0 ? dim + n : dim;
}

Tensor to_out(const Args& a, Tensor result) {
    if (a.has("out") && !a.is_none("out")) {
        Tensor out = a.tensor("out");
        write_into(out, result, a.op());
        return out;
    }
    return result;
}

}  // namespace ember::jit::detail
