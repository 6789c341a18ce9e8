// LSTM: each layer and direction runs the cell over the time steps with differentiable
// core ops (the input projection of all steps is one matrix product before the loop).
#include "ember/nn/modules/rnn.h"

#include <cmath>
#include <sstream>

#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"

namespace ember {
namespace nn {

namespace {

// Python's "(2, 3, 8)" for the expected size and "[2, 3, 7]" for the one got.
std::string list_repr(IntArrayRef sizes) {
    std::ostringstream os;
    os << sizes;
    return os.str();
}

void check_hidden_size(const Tensor& hx, const std::vector<int64_t>& expected, const char* which) {
    EMBER_CHECK(hx.sizes() == IntArrayRef(expected), "Expected ", which, " size ", detail::py_tuple_repr(expected),
                ", got ", list_repr(hx.sizes()));
}

struct LayerResult {
    Tensor output;  // (T, B, P)
    Tensor h_n;     // (B, P)
    Tensor c_n;     // (B, H)
};

// One layer and direction over x (T, B, I): ws = {w_ih, w_hh[, b_ih, b_hh][, w_hr]}.
LayerResult run_direction(const Tensor& x, const Tensor& h0, const Tensor& c0, const std::vector<Tensor>& ws,
                          bool bias, bool proj, bool reverse) {
    const int64_t T = x.size(0), B = x.size(1);
    const Tensor& w_ih = ws[0];
    const Tensor& w_hh = ws[1];
    const Tensor b_ih = bias ? ws[2] : Tensor();
    const Tensor b_hh = bias ? ws[3] : Tensor();
    const Tensor w_hr = proj ? ws.back() : Tensor();
    const Tensor xw = functional::linear(x.reshape({T * B, x.size(2)}), w_ih, b_ih).view({T, B, w_ih.size(0)});
    Tensor h = h0, c = c0;
    std::vector<Tensor> ys(static_cast<size_t>(T));
    for (int64_t s = 0; s < T; ++s) {
        const int64_t t = reverse ? T - 1 - s : s;
        const std::vector<Tensor> gates = (xw.select(0, t) + functional::linear(h, w_hh, b_hh)).chunk(4, 1);
        c = gates[1].sigmoid() * c + gates[0].sigmoid() * gates[2].tanh();
        h = gates[3].sigmoid() * c.tanh();
        if (proj) h = functional::linear(h, w_hr);
        ys[static_cast<size_t>(t)] = h;
    }
    return {stack(ys, 0), h, c};
}

}  // namespace

LSTMImpl::LSTMImpl(const LSTMOptions& options_) : options(options_) {
    const double dropout = options.dropout();
    EMBER_CHECK_VALUE(dropout >= 0 && dropout <= 1,
                      "dropout should be a number in range [0, 1] representing the probability of an element being "
                      "zeroed");
    EMBER_CHECK_VALUE(options.input_size() > 0, "input_size must be greater than zero");
    EMBER_CHECK_VALUE(options.hidden_size() > 0, "hidden_size must be greater than zero");
    EMBER_CHECK_VALUE(options.num_layers() > 0, "num_layers must be greater than zero");
    EMBER_CHECK_VALUE(options.proj_size() >= 0,
                      "proj_size should be a positive integer or zero to disable projections");
    EMBER_CHECK_VALUE(options.proj_size() < options.hidden_size(), "proj_size has to be smaller than hidden_size");
    const int64_t hidden = options.hidden_size();
    const int64_t gate_size = 4 * hidden;
    const int64_t real_hidden = options.proj_size() > 0 ? options.proj_size() : hidden;
    const int64_t directions = options.bidirectional() ? 2 : 1;
    for (int64_t layer = 0; layer < options.num_layers(); ++layer) {
        for (int64_t direction = 0; direction < directions; ++direction) {
            const int64_t layer_input = layer == 0 ? options.input_size() : real_hidden * directions;
            const std::string suffix = std::to_string(layer) + (direction == 1 ? "_reverse" : "");
            std::vector<Tensor> ws;
            ws.push_back(register_parameter("weight_ih_l" + suffix, empty({gate_size, layer_input})));
            ws.push_back(register_parameter("weight_hh_l" + suffix, empty({gate_size, real_hidden})));
            if (options.bias()) {
                ws.push_back(register_parameter("bias_ih_l" + suffix, empty({gate_size})));
                ws.push_back(register_parameter("bias_hh_l" + suffix, empty({gate_size})));
            }
            if (options.proj_size() > 0) {
                ws.push_back(register_parameter("weight_hr_l" + suffix, empty({options.proj_size(), hidden})));
            }
            all_weights_.push_back(std::move(ws));
        }
    }
    reset_parameters();
}

void LSTMImpl::reset_parameters() {
    const double stdv = 1.0 / std::sqrt(static_cast<double>(options.hidden_size()));
    for (const Tensor& w : parameters()) init::uniform_(w, -stdv, stdv);
}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx) {
    EMBER_CHECK_VALUE(input.dim() == 2 || input.dim() == 3, "LSTM: Expected input to be 2D or 3D, got ", input.dim(),
                      "D instead");
    const bool batched = input.dim() == 3;
    const int64_t batch_dim = options.batch_first() ? 0 : 1;
    const Tensor x_in = batched ? input : input.unsqueeze(batch_dim);
    Tensor h0, c0;
    if (hx) {
        std::tie(h0, c0) = *hx;
        const int64_t want = batched ? 3 : 2;
        EMBER_CHECK(h0.dim() == want && c0.dim() == want, "For ", batched ? "batched 3-D" : "unbatched 2-D",
                    " input, hx and cx should also be ", want, "-D but got (", h0.dim(), "-D, ", c0.dim(),
                    "-D) tensors");
        if (!batched) {
            h0 = h0.unsqueeze(1);
            c0 = c0.unsqueeze(1);
        }
    }
    const Tensor& w0 = all_weights_[0][0];
    EMBER_CHECK_VALUE(input.scalar_type() == w0.scalar_type(), "RNN input dtype (ember.",
                      dtype_name(input.scalar_type()), ") does not match weight dtype (ember.",
                      dtype_name(w0.scalar_type()), "). Convert input: input.to(ember.", dtype_name(w0.scalar_type()),
                      "), or convert model: model.to(ember.", dtype_name(input.scalar_type()), ")");
    EMBER_CHECK(options.input_size() == x_in.size(-1), "input.size(-1) must be equal to input_size. Expected ",
                options.input_size(), ", got ", x_in.size(-1));
    const int64_t directions = options.bidirectional() ? 2 : 1;
    const int64_t batch = x_in.size(batch_dim);
    const int64_t hidden = options.hidden_size();
    const int64_t real_hidden = options.proj_size() > 0 ? options.proj_size() : hidden;
    const int64_t states = options.num_layers() * directions;
    if (hx) {
        check_hidden_size(h0, {states, batch, real_hidden}, "hidden[0]");
        check_hidden_size(c0, {states, batch, hidden}, "hidden[1]");
    }

    Tensor x = options.batch_first() ? x_in.transpose(0, 1) : x_in;  // (T, B, I)
    std::vector<Tensor> hs, cs;
    for (int64_t layer = 0; layer < options.num_layers(); ++layer) {
        if (layer > 0 && options.dropout() > 0 && is_training()) x = functional::dropout(x, options.dropout(), true);
        std::vector<Tensor> outs;
        for (int64_t direction = 0; direction < directions; ++direction) {
            const int64_t k = layer * directions + direction;
            const Tensor h = hx ? h0.select(0, k) : zeros({batch, real_hidden}, input.scalar_type());
            const Tensor c = hx ? c0.select(0, k) : zeros({batch, hidden}, input.scalar_type());
            LayerResult r = run_direction(x, h, c, all_weights_[static_cast<size_t>(k)], options.bias(),
                                          options.proj_size() > 0, direction == 1);
            outs.push_back(r.output);
            hs.push_back(r.h_n);
            cs.push_back(r.c_n);
        }
        x = directions == 1 ? outs[0] : cat(outs, -1);
    }
    Tensor output = options.batch_first() ? x.transpose(0, 1) : x;
    Tensor h_n = stack(hs, 0), c_n = stack(cs, 0);
    if (!batched) {
        output = output.squeeze(batch_dim);
        h_n = h_n.squeeze(1);
        c_n = c_n.squeeze(1);
    }
    return {output, {h_n, c_n}};
}

std::string LSTMImpl::extra_repr() const {
    std::string s = std::to_string(options.input_size()) + ", " + std::to_string(options.hidden_size());
    if (options.proj_size() != 0) s += ", proj_size=" + std::to_string(options.proj_size());
    if (options.num_layers() != 1) s += ", num_layers=" + std::to_string(options.num_layers());
    if (!options.bias()) s += ", bias=False";
    if (options.batch_first()) s += ", batch_first=True";
    if (options.dropout() != 0) s += ", dropout=" + detail::py_float_repr(options.dropout());
    if (options.bidirectional()) s += ", bidirectional=True";
    return s;
}

}  // namespace nn
}  // namespace ember
