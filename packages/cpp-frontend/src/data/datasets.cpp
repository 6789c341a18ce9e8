// TensorDataset, the Stack collations and random_split.
#include "ember/data/datasets.h"

#include <cmath>
#include <numeric>

#include "ember/data/transforms.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember {
namespace data {

// ---------------------------------------------------------------------------- TensorDataset

namespace datasets {

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
    EMBER_CHECK_VALUE(tensors_.size() == 1 || tensors_.size() == 2,
                      "TensorDataset holds a data tensor and optionally a target tensor, got ",
                      tensors_.size(), " tensors");
    for (const Tensor& t : tensors_) {
        EMBER_CHECK_VALUE(t.defined() && t.dim() > 0,
                          "TensorDataset needs defined tensors of at least one dimension");
    }
    EMBER_CHECK_VALUE(tensors_.size() == 1 || tensors_[0].size(0) == tensors_[1].size(0),
                      "Size mismatch between tensors");
}

TensorDataset::TensorDataset(Tensor data, Tensor target)
    : TensorDataset(std::vector<Tensor>{std::move(data), std::move(target)}) {}

Example<> TensorDataset::get(std::size_t index) {
    const auto i = static_cast<int64_t>(index);
    Tensor target = tensors_.size() == 2 ? tensors_[1].select(0, i) : Tensor();
    return {tensors_[0].select(0, i), std::move(target)};
}

std::optional<std::size_t> TensorDataset::size() const {
    return static_cast<std::size_t>(tensors_[0].size(0));
}

// ----------------------------------------------------------------------------- random_split

std::vector<std::vector<std::size_t>> random_split(std::size_t n, const std::vector<double>& lengths,
                                                   std::optional<uint64_t> seed) {
    EMBER_CHECK_VALUE(!lengths.empty(), "random_split needs at least one length");
    const double total = std::accumulate(lengths.begin(), lengths.end(), 0.0);
    std::vector<std::size_t> sizes;
    sizes.reserve(lengths.size());
    // Python: math.isclose(sum(lengths), 1) and sum(lengths) <= 1 means fractions
    if (std::fabs(total - 1) <= 1e-9 * std::fmax(std::fabs(total), 1.0) && total <= 1) {
        std::size_t assigned = 0;
        for (std::size_t i = 0; i < lengths.size(); ++i) {
            EMBER_CHECK_VALUE(lengths[i] >= 0 && lengths[i] <= 1, "Fraction at index ", i,
                              " is not between 0 and 1");
            sizes.push_back(static_cast<std::size_t>(std::floor(static_cast<double>(n) * lengths[i])));
            assigned += sizes.back();
        }
        for (std::size_t i = 0; assigned + i < n; ++i) sizes[i % sizes.size()] += 1;
    } else {
        for (double length : lengths) {
            EMBER_CHECK_VALUE(length >= 0 && std::floor(length) == length,
                              "random_split: lengths must be non-negative integers or fractions "
                              "summing to 1, got ", length);
            sizes.push_back(static_cast<std::size_t>(length));
        }
    }
    EMBER_CHECK_VALUE(std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}) == n,
                      "Sum of input lengths does not equal the length of the input dataset!");
    Generator generator = seed ? Generator(*seed) : default_generator();
    const Tensor perm = randperm(static_cast<int64_t>(n), generator).contiguous();
    const int64_t* p = perm.data_ptr<int64_t>();
    std::vector<std::vector<std::size_t>> subsets;
    subsets.reserve(sizes.size());
    std::size_t start = 0;
    for (std::size_t size : sizes) {
        subsets.emplace_back(p + start, p + start + size);
        start += size;
    }
    return subsets;
}

}  // namespace datasets

// ---------------------------------------------------------------------------------- Stack

namespace transforms {

namespace {

// ember::stack of the tensors `part` picks from each example: undefined when no example
// has one, an error when only some have.
template <typename E, typename Part>
Tensor stack_part(const std::vector<E>& examples, Part part, const char* what) {
    std::vector<Tensor> tensors;
    tensors.reserve(examples.size());
    for (const E& e : examples) {
        const Tensor& t = part(e);
        if (t.defined()) tensors.push_back(t);
    }
    if (tensors.empty()) return Tensor();
    EMBER_CHECK(tensors.size() == examples.size(), "Stack: only some of the examples have a ",
                what);
    return stack(tensors);
}

}  // namespace

Example<> Stack<Example<>>::apply_batch(std::vector<Example<>> examples) {
    EMBER_CHECK(!examples.empty(), "Stack: the batch is empty");
    Tensor data = stack_part(examples, [](const Example<>& e) -> const Tensor& { return e.data; },
                             "data tensor");
    Tensor target = stack_part(
        examples, [](const Example<>& e) -> const Tensor& { return e.target; }, "target");
    return {std::move(data), std::move(target)};
}

TensorExample Stack<TensorExample>::apply_batch(std::vector<TensorExample> examples) {
    EMBER_CHECK(!examples.empty(), "Stack: the batch is empty");
    return stack_part(examples, [](const TensorExample& e) -> const Tensor& { return e.data; },
                      "data tensor");
}

}  // namespace transforms
}  // namespace data
}  // namespace ember
