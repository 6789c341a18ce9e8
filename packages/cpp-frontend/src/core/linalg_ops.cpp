// Matrix products through BLAS (float32/float64/complex64/complex128; other dtypes by plain
// loops): mm, bmm, addmm, mv, dot, vdot, outer, matmul, linear, and their gradients. Transposed operands are passed
// to BLAS as transposes, not copied.
#include "blas.h"
#include "ember/complex.h"
#include "op_common.h"

namespace ember {

using namespace native;

namespace {

// How a 2-D operand is passed to gemm: its data, whether transposed, its leading dimension.
struct GemmOperand {
    Tensor keep;  // holds a contiguous copy when one was needed
    bool trans = false;
    int64_t ld = 1;
};

GemmOperand gemm_operand(const Tensor& t) {
    const int64_t r = t.size(0), c = t.size(1);
    const int64_t s0 = t.stride(0), s1 = t.stride(1);
    GemmOperand op;
    if ((s1 == 1 || c == 1) && (s0 >= std::max<int64_t>(1, c) || r == 1)) {
        op.keep = t;
        op.ld = r == 1 ? std::max<int64_t>(1, c) : s0;
        if (op.ld < std::max<int64_t>(1, c)) op.ld = std::max<int64_t>(1, c);
        return op;
    }
    if ((s0 == 1 || r == 1) && (s1 >= std::max<int64_t>(1, r) || c == 1)) {
        op.keep = t;
        op.trans = true;
        op.ld = c == 1 ? std::max<int64_t>(1, r) : s1;
        return op;
    }
    op.keep = contiguous_data(t);
    op.ld = std::max<int64_t>(1, c);
    return op;
}

// c (m x n, contiguous) = alpha * a @ b + beta * c
void gemm_into(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta) {
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    if (m == 0 || n == 0) return;
    const ScalarType dt = c.scalar_type();
    if (k == 0) {
        NoGradGuard g;
        if (beta == 0) c.zero_();
        else c.mul_(beta);
        return;
    }
    if (dt == kFloat || dt == kDouble) {
        const GemmOperand oa = gemm_operand(a), ob = gemm_operand(b);
        if (dt == kFloat) {
            blas::gemm(oa.trans, ob.trans, m, n, k, static_cast<float>(alpha), static_cast<const float*>(oa.keep.data_ptr()),
                       oa.ld, static_cast<const float*>(ob.keep.data_ptr()), ob.ld, static_cast<float>(beta),
                       static_cast<float*>(c.data_ptr()), n);
        } else {
            blas::gemm(oa.trans, ob.trans, m, n, k, alpha, static_cast<const double*>(oa.keep.data_ptr()), oa.ld,
                       static_cast<const double*>(ob.keep.data_ptr()), ob.ld, beta, static_cast<double*>(c.data_ptr()), n);
        }
        return;
    }
    if (dt == kComplexFloat || dt == kComplexDouble) {  // cgemm / zgemm
        const GemmOperand oa = gemm_operand(a), ob = gemm_operand(b);
        dispatch_set<kComplexTypes>(dt, "addmm_impl_cpu_", [&](auto tag) {
            using T = typename decltype(tag)::type;
            blas::gemm(oa.trans, ob.trans, m, n, k, T(static_cast<typename T::value_type>(alpha)),
                       static_cast<const T*>(oa.keep.data_ptr()), oa.ld, static_cast<const T*>(ob.keep.data_ptr()),
                       ob.ld, T(static_cast<typename T::value_type>(beta)), static_cast<T*>(c.data_ptr()), n);
        });
        return;
    }
    if (dt == kHalf) {
        Tensor cf = cast(c, kFloat);
        if (beta == 0) cf = empty_tensor(c.sizes(), kFloat);
        gemm_into(cast(a, kFloat), cast(b, kFloat), cf, alpha, beta);
        copy_kernel(c, cf);
        return;
    }
    EMBER_CHECK(dt != kBool, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
    dispatch_numeric(dt, "addmm_impl_cpu_", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T>) {
            const Tensor ac = contiguous_data(a), bc = contiguous_data(b);
            const T* ap = static_cast<const T*>(ac.data_ptr());
            const T* bp = static_cast<const T*>(bc.data_ptr());
            T* cp = static_cast<T*>(c.data_ptr());
            const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
            for (int64_t i = 0; i < m; ++i) {
                for (int64_t j = 0; j < n; ++j) {
                    T acc = 0;
                    for (int64_t p = 0; p < k; ++p) acc = static_cast<T>(acc + ap[i * k + p] * bp[p * n + j]);
                    cp[i * n + j] = beta == 0 ? static_cast<T>(al * acc) : static_cast<T>(al * acc + be * cp[i * n + j]);
                }
            }
        }
    });
}

void check_mm_dtypes(const Tensor& a, const Tensor& b) {
    EMBER_CHECK(a.scalar_type() == b.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
                cpp_type_name(a.scalar_type()), " != ", cpp_type_name(b.scalar_type()));
}

Tensor mm_kernel(const Tensor& a, const Tensor& b) {
    Tensor out = empty_tensor({a.size(0), b.size(1)}, a.scalar_type());
    gemm_into(a, b, out, 1.0, 0.0);
    return out;
}

// Whether m is a transposed contiguous matrix (its .t() is contiguous): then the gradient
// w.r.t. it is computed in that layout too, so it reaches a weight used as w.t() contiguous.
bool is_transposed(const Tensor& m) {
    return m.dim() == 2 && m.stride(0) == 1 && m.stride(1) == m.size(0) && m.size(1) > 1 && m.size(0) > 1;
}

// d(mat1 @ mat2)/d(mat2) applied to g
Tensor mm_mat2_backward(const Tensor& g, const Tensor& mat1, bool mat2_transposed) {
    if (mat2_transposed) return g.t().mm(mat1).t();
    return mat1.t().mm(g);
}

// d(mat1 @ mat2)/d(mat1) applied to g
Tensor mm_mat1_backward(const Tensor& g, const Tensor& mat2, bool mat1_transposed) {
    if (mat1_transposed) return mat2.mm(g.t()).t();
    return g.mm(mat2.t());
}

// Records out = a (*) b for a product linear in each operand: grad_a(g, b) and grad_b(g, a)
// are the operands' gradients (each operand is saved only when the other's gradient is needed).
template <typename GradA, typename GradB>
void record_product(const Tensor& out, const char* node_name, const Tensor& a, const Tensor& b, GradA grad_a,
                    GradB grad_b) {
    if (auto n = make_node(node_name, {a, b})) {
        set_history(out, n, 0);
        n->save(n->needs(1) ? a : Tensor());
        n->save(n->needs(0) ? b : Tensor());
        n->set_formula([grad_a, grad_b](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            Tensor ga = node.needs(0) ? grad_a(g[0], node.saved(1)) : Tensor();
            Tensor gb = node.needs(1) ? grad_b(g[0], node.saved(0)) : Tensor();
            return {ga, gb};
        });
    }
}

}  // namespace

Tensor mm(const Tensor& self, const Tensor& mat2) {
    EMBER_CHECK(self.dim() == 2, "self must be a matrix");
    EMBER_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
    EMBER_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", self.size(0), "x",
                self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
    check_mm_dtypes(self, mat2);
    Tensor out = mm_kernel(self, mat2);
    const bool at = is_transposed(self), bt = is_transposed(mat2);
    record_product(
        out, "MmBackward0", self, mat2, [at](const Tensor& g, const Tensor& b) { return mm_mat1_backward(g, b, at); },
        [bt](const Tensor& g, const Tensor& a) { return mm_mat2_backward(g, a, bt); });
    return out;
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
    EMBER_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
    EMBER_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
    EMBER_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x",
                mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
    check_mm_dtypes(mat1, mat2);
    EMBER_CHECK(self.scalar_type() == mat1.scalar_type(), "self and mat2 must have the same dtype, but got ",
                scalar_type_name(self.scalar_type()), " and ", scalar_type_name(mat1.scalar_type()));
    const std::vector<int64_t> shape{mat1.size(0), mat2.size(1)};
    Tensor out = empty_tensor(shape, mat1.scalar_type());
    const double b = beta.toDouble(), a = alpha.toDouble();
    if (b != 0) copy_kernel(out, self.expand(shape));
    gemm_into(mat1, mat2, out, a, b);
    if (auto n = make_node("AddmmBackward0", {self, mat1, mat2})) {
        set_history(out, n, 0);
        n->save(n->needs(2) ? mat1 : Tensor());
        n->save(n->needs(1) ? mat2 : Tensor());
        const auto s0 = self.sizes().vec();
        const bool t1 = is_transposed(mat1), t2 = is_transposed(mat2);
        n->set_formula([s0, a, b, t1, t2](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor(), Tensor()};
            Tensor gs = node.needs(0) ? reduce_grad(b == 1 ? g[0] : g[0] * b, s0) : Tensor();
            Tensor g1, g2;
            if (node.needs(1)) {
                g1 = mm_mat1_backward(g[0], node.saved(1), t1);
                if (a != 1) g1 = g1 * a;
            }
            if (node.needs(2)) {
                g2 = mm_mat2_backward(g[0], node.saved(0), t2);
                if (a != 1) g2 = g2 * a;
            }
            return {gs, g1, g2};
        });
    }
    return out;
}

Tensor bmm(const Tensor& self, const Tensor& mat2) {
    EMBER_CHECK(self.dim() == 3, "batch1 must be a 3D tensor");
    EMBER_CHECK(mat2.dim() == 3, "batch2 must be a 3D tensor");
    const int64_t bs = self.size(0), m = self.size(1), k = self.size(2), n = mat2.size(2);
    EMBER_CHECK(mat2.size(0) == bs && mat2.size(1) == k, "Expected size for first two dimensions of batch2 tensor to be: [",
                bs, ", ", k, "] but got: [", mat2.size(0), ", ", mat2.size(1), "].");
    check_mm_dtypes(self, mat2);
    Tensor out = empty_tensor({bs, m, n}, self.scalar_type());
    {
        NoGradGuard g;
        for (int64_t i = 0; i < bs; ++i) gemm_into(self.select(0, i), mat2.select(0, i), out.select(0, i), 1.0, 0.0);
    }
    record_product(
        out, "BmmBackward0", self, mat2, [](const Tensor& g, const Tensor& b) { return g.bmm(b.transpose(1, 2)); },
        [](const Tensor& g, const Tensor& a) { return a.transpose(1, 2).bmm(g); });
    return out;
}

Tensor mv(const Tensor& self, const Tensor& vec) {
    EMBER_CHECK(self.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got 1, ", self.dim(), ", ", vec.dim());
    EMBER_CHECK(self.size(1) == vec.size(0), "size mismatch, got input (", self.size(0), "), mat (", self.size(0), "x",
                self.size(1), "), vec (", vec.size(0), ")");
    check_mm_dtypes(self, vec);
    Tensor out = empty_tensor({self.size(0), 1}, self.scalar_type());
    {
        NoGradGuard g;
        gemm_into(self, vec.unsqueeze(1), out, 1.0, 0.0);
        out = out.view({self.size(0)});
    }
    record_product(
        out, "MvBackward0", self, vec, [](const Tensor& g, const Tensor& v) { return g.unsqueeze(1) * v.unsqueeze(0); },
        [](const Tensor& g, const Tensor& m) { return m.t().mv(g); });
    return out;
}

Tensor dot(const Tensor& self, const Tensor& other) {
    EMBER_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ", other.dim(),
                "D tensors");
    EMBER_CHECK(self.scalar_type() == other.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
                scalar_type_name(self.scalar_type()), " and ", scalar_type_name(other.scalar_type()));
    EMBER_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [", self.numel(),
                "] and src [", other.numel(), "] to have the same number of elements, but got ", self.numel(), " and ",
                other.numel(), " elements respectively");
    Tensor out = empty_tensor({1, 1}, self.scalar_type());
    {
        NoGradGuard g;
        gemm_into(self.unsqueeze(0), other.unsqueeze(1), out, 1.0, 0.0);
        out = out.view({});
    }
    const auto times = [](const Tensor& g, const Tensor& v) { return g * v; };
    record_product(out, "DotBackward0", self, other, times, times);
    return out;
}

Tensor vdot(const Tensor& self, const Tensor& other) {
    EMBER_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ", other.dim(),
                "D tensors");
    EMBER_CHECK(self.scalar_type() == other.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
                scalar_type_name(self.scalar_type()), " and ", scalar_type_name(other.scalar_type()));
    if (!self.is_complex()) return dot(self, other);
    return dot(conj_physical(self), other);  // complex tensors record no autograd
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
    EMBER_CHECK(self.dim() == 1 && vec2.dim() == 1, "outer: expected 1D tensors, but got ", self.dim(), "D and ",
                vec2.dim(), "D tensors");
    return self.reshape({-1, 1}) * vec2;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
    const int64_t d1 = a.dim(), d2 = b.dim();
    EMBER_CHECK(d1 > 0 && d2 > 0, "both arguments to matmul need to be at least 1D, but they are ", d1, "D and ", d2, "D");
    if (d1 == 1 && d2 == 1) return dot(a, b);
    if (d1 == 2 && d2 == 1) return mv(a, b);
    if (d1 == 1 && d2 == 2) {
        EMBER_CHECK(a.size(0) == b.size(0), "size mismatch, got input (1x", a.size(0), "), mat2 (", b.size(0), "x",
                    b.size(1), ")");
        return a.unsqueeze(0).mm(b).squeeze(0);
    }
    if (d1 == 2 && d2 == 2) return mm(a, b);
    if (d1 >= 3 && (d2 == 1 || d2 == 2)) {
        // fold the batch into the rows: (..., n, k) @ (k, p)
        const int64_t k = a.size(-1);
        const Tensor b2 = d2 == 1 ? b.unsqueeze(-1) : b;
        EMBER_CHECK(k == b2.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.numel() / std::max<int64_t>(k, 1),
                    "x", k, " and ", b2.size(0), "x", b2.size(1), ")");
        std::vector<int64_t> out_shape(a.sizes().begin(), a.sizes().end() - 1);
        if (d2 == 2) out_shape.push_back(b.size(1));
        const Tensor folded = a.reshape({-1, k}).mm(b2);
        return folded.reshape(out_shape);
    }
    // batched: broadcast the batch dims
    const Tensor a3 = d1 == 1 ? a.unsqueeze(0) : a;
    const Tensor b3 = d2 == 1 ? b.unsqueeze(-1) : b;
    const int64_t n = a3.size(-2), k = a3.size(-1), k2 = b3.size(-2), p = b3.size(-1);
    EMBER_CHECK(k == k2, "Expected size for first two dimensions of batch2 tensor to be: [", "...", ", ", k,
                "] but got: [", "...", ", ", k2, "].");
    const std::vector<int64_t> ba(a3.sizes().begin(), a3.sizes().end() - 2), bb(b3.sizes().begin(), b3.sizes().end() - 2);
    const std::vector<int64_t> batch = infer_size(ba, bb);
    int64_t nb = 1;
    for (int64_t s : batch) nb *= s;
    std::vector<int64_t> ea = batch, eb = batch;
    ea.push_back(n);
    ea.push_back(k);
    eb.push_back(k);
    eb.push_back(p);
    const Tensor A = a3.expand(ea).reshape({nb, n, k});
    const Tensor B = b3.expand(eb).reshape({nb, k, p});
    std::vector<int64_t> out_shape = batch;
    if (d1 > 1) out_shape.push_back(n);
    if (d2 > 1) out_shape.push_back(p);
    return A.bmm(B).reshape(out_shape);
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
    if (input.dim() == 2 && bias.defined()) return addmm(bias, input, weight.t());
    if (bias.defined() && input.dim() >= 3) {
        const int64_t k = input.size(-1);
        std::vector<int64_t> out_shape(input.sizes().begin(), input.sizes().end() - 1);
        out_shape.push_back(weight.size(0));
        return addmm(bias, input.reshape({-1, k}), weight.t()).view(out_shape);
    }
    Tensor out = matmul(input, weight.t());
    if (bias.defined()) out = out + bias;
    return out;
}

Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& mat2) const { return ember::mm(*this, mat2); }
Tensor Tensor::bmm(const Tensor& mat2) const { return ember::bmm(*this, mat2); }
Tensor Tensor::mv(const Tensor& vec) const { return ember::mv(*this, vec); }
Tensor Tensor::dot(const Tensor& other) const { return ember::dot(*this, other); }
Tensor Tensor::vdot(const Tensor& other) const { return ember::vdot(*this, other); }
Tensor Tensor::outer(const Tensor& vec2) const { return ember::outer(*this, vec2); }
Tensor Tensor::addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) const {
    return ember::addmm(*this, mat1, mat2, beta, alpha);
}

}  // namespace ember
