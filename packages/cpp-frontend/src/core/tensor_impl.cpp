#include "ember/tensor_impl.h"

#include <atomic>
#include <sstream>

#include "ember/autograd.h"
#include "ember/tensor.h"
#include "tensor_utils.h"

namespace ember {

namespace {
std::atomic<ScalarType> g_default_dtype{ScalarType::Float};
}

ScalarType get_default_dtype() noexcept { return g_default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(ScalarType t) {
    EMBER_CHECK(is_floating_point(t), "only floating-point types are supported as the default type");
    g_default_dtype.store(t, std::memory_order_relaxed);
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, std::vector<int64_t> sizes,
                       std::vector<int64_t> strides, int64_t storage_offset,
                       std::shared_ptr<VersionCounter> version)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      storage_offset_(storage_offset),
      dtype_(dtype),
      version_(version ? std::move(version) : std::make_shared<VersionCounter>()) {
    refresh();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::refresh() {
    numel_ = 1;
    for (int64_t s : sizes_) numel_ *= s;
    is_contiguous_ = true;
    if (numel_ == 0) return;
    int64_t expected = 1;
    for (size_t i = sizes_.size(); i-- > 0;) {
        if (sizes_[i] != 1) {
            if (strides_[i] != expected) {
                is_contiguous_ = false;
                return;
            }
            expected *= sizes_[i];
        }
    }
}

void TensorImpl::set_sizes_and_strides(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                                       int64_t storage_offset) {
    EMBER_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
    sizes_ = std::move(sizes);
    strides_ = std::move(strides);
    storage_offset_ = storage_offset;
    refresh();
}

autograd::AutogradMeta& TensorImpl::ensure_autograd_meta() {
    if (!autograd_meta_) autograd_meta_ = std::make_unique<autograd::AutogradMeta>();
    return *autograd_meta_;
}

namespace native {

Tensor make_tensor(Storage storage, ScalarType dtype, std::vector<int64_t> sizes,
                   std::vector<int64_t> strides, int64_t offset,
                   std::shared_ptr<VersionCounter> version) {
    return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(sizes),
                                               std::move(strides), offset, std::move(version)));
}

Tensor empty_tensor(IntArrayRef sizes, ScalarType dtype, bool zero) {
    int64_t n = 1;
    for (int64_t s : sizes) {
        EMBER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
        n *= s;
    }
    Storage storage = Storage::allocate(static_cast<size_t>(n) * element_size(dtype), zero);
    return make_tensor(std::move(storage), dtype, sizes.vec(), contiguous_strides(sizes), 0);
}

int64_t storage_extent(IntArrayRef sizes, IntArrayRef strides) {
    EMBER_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
    int64_t extent = 1;  // 1 + max offset
    bool empty = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
        EMBER_CHECK(sizes[i] >= 0, "Trying to create tensor with negative dimension ", sizes[i], ": ", sizes);
        if (sizes[i] == 0) empty = true;
        extent += (sizes[i] - 1) * strides[i];
    }
    return empty ? 0 : extent;
}

Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype) {
    const int64_t extent = storage_extent(sizes, strides);
    Storage storage = Storage::allocate(static_cast<size_t>(extent) * element_size(dtype));
    return make_tensor(std::move(storage), dtype, sizes.vec(), strides.vec(), 0);
}

Tensor make_view(const Tensor& self, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 int64_t offset) {
    return make_view(self, std::move(sizes), std::move(strides), offset, self.scalar_type());
}

Tensor make_view(const Tensor& self, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 int64_t offset, ScalarType dtype) {
    TensorImpl* impl = self.unsafeGetTensorImpl();
    Tensor v = make_tensor(impl->storage(), dtype, std::move(sizes), std::move(strides), offset,
                           impl->version_counter());
    TensorImpl* vi = v.unsafeGetTensorImpl();
    vi->set_base(impl->is_view() ? impl->base() : self.getIntrusivePtr());
    vi->set_view_attr_version(impl->version());
    if (!GradMode::is_enabled()) {
        vi->set_view_creation_meta(static_cast<uint8_t>(autograd::CreationMeta::NO_GRAD_MODE));
    } else if (impl->is_view()) {
        vi->set_view_creation_meta(impl->view_creation_meta());
    }
    return v;
}

std::vector<bool> dim_mask(IntArrayRef dims, int64_t ndim) {
    std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
    for (int64_t d : dims) {
        const int64_t w = wrap_dim(d, ndim);
        if (ndim == 0) continue;
        EMBER_CHECK(!mask[static_cast<size_t>(w)], "dim ", w, " appears multiple times in the list of dims");
        mask[static_cast<size_t>(w)] = true;
    }
    return mask;
}

std::vector<int64_t> reduced_shape(IntArrayRef sizes, const std::vector<bool>& mask, bool keepdim) {
    std::vector<int64_t> out;
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (!mask[i]) out.push_back(sizes[i]);
        else if (keepdim) out.push_back(1);
    }
    return out;
}

std::string shape_str(IntArrayRef sizes) {
    std::ostringstream os;
    os << sizes;
    return os.str();
}

}  // namespace native
}  // namespace ember
