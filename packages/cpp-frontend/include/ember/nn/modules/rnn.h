// LSTM (libtorch's torch::nn::LSTM; Python's nn.LSTM).
//
//   ember::nn::LSTM lstm(ember::nn::LSTMOptions(4, 8).num_layers(2).batch_first(true));
//   auto [output, state] = lstm(x);          // x (N, L, 4) -> output (N, L, 8)
//   auto [h_n, c_n] = state;                 // (num_layers * directions, N, 8) each
//
// Parameters per layer k and direction (suffix "_reverse" for the backward one), in
// Python's order: weight_ih_l{k} (4H, in), weight_hh_l{k} (4H, H), bias_ih_l{k} (4H),
// bias_hh_l{k} (4H) [, weight_hr_l{k} (proj_size, H)], all from U(-1/sqrt(H), 1/sqrt(H));
// the gates are stacked i, f, g, o as in PyTorch.
#pragma once

#include "../../export.h"
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../module.h"
#include "../options/rnn.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

class EMBER_API LSTMImpl : public Module {
public:
    LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
    explicit LSTMImpl(const LSTMOptions& options);

    // input (L, N, input_size), (N, L, input_size) with batch_first, or unbatched
    // (L, input_size); hx: (h_0, c_0), each (num_layers * directions, N, H_out / H)
    // (zeros when not given). Returns (output, (h_n, c_n)).
    std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                           std::optional<std::tuple<Tensor, Tensor>> hx = {});
    // every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
    void reset_parameters();
    // "4, 8, num_layers=2, batch_first=True"
    std::string extra_repr() const override;
    // the parameters of each layer and direction: {w_ih, w_hh[, b_ih, b_hh][, w_hr]}
    const std::vector<std::vector<Tensor>>& all_weights() const noexcept { return all_weights_; }

    LSTMOptions options;

private:
    std::vector<std::vector<Tensor>> all_weights_;
};
EMBER_MODULE(LSTM);

}  // namespace nn
}  // namespace ember
