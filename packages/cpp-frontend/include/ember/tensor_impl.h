// ember::TensorImpl: what an ember::Tensor handle points to (c10::TensorImpl): a storage,
// sizes, strides (in elements), a storage offset, a dtype, a version counter shared with the
// tensor's views, the base tensor when it is a view, and the autograd metadata (grad,
// grad_fn, output_nr, requires_grad, hooks) when autograd has touched it.
#pragma once

#include "export.h"
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "array_ref.h"
#include "dtype.h"
#include "storage.h"

namespace ember {

namespace autograd {
struct AutogradMeta;
}

// Counts in-place modifications of a storage's data; shared by a tensor and its views, so a
// saved tensor modified through any alias is detected at backward time.
struct VersionCounter {
    std::atomic<uint32_t> version{0};
};

class EMBER_API TensorImpl {
public:
    TensorImpl(Storage storage, ScalarType dtype, std::vector<int64_t> sizes,
               std::vector<int64_t> strides, int64_t storage_offset,
               std::shared_ptr<VersionCounter> version = nullptr);
    ~TensorImpl();
    TensorImpl(const TensorImpl&) = delete;
    TensorImpl& operator=(const TensorImpl&) = delete;

    IntArrayRef sizes() const noexcept { return sizes_; }
    IntArrayRef strides() const noexcept { return strides_; }
    int64_t dim() const noexcept { return static_cast<int64_t>(sizes_.size()); }
    int64_t numel() const noexcept { return numel_; }
    int64_t storage_offset() const noexcept { return storage_offset_; }
    ScalarType dtype() const noexcept { return dtype_; }
    std::size_t itemsize() const noexcept { return element_size(dtype_); }
    bool is_contiguous() const noexcept { return is_contiguous_; }
    const Storage& storage() const noexcept { return storage_; }

    // Pointer to the first element (storage data + offset).
    void* data() const noexcept {
        return static_cast<char*>(storage_.data()) +
               storage_offset_ * static_cast<int64_t>(element_size(dtype_));
    }

    // Changes the geometry (as_strided_, resize of a fresh tensor); the storage must hold it.
    void set_sizes_and_strides(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                               int64_t storage_offset);
    void set_storage(Storage storage) { storage_ = std::move(storage); }

    uint32_t version() const noexcept { return version_->version.load(std::memory_order_relaxed); }
    void bump_version() noexcept { version_->version.fetch_add(1, std::memory_order_relaxed); }
    const std::shared_ptr<VersionCounter>& version_counter() const noexcept { return version_; }

    // The tensor this one is a view of (the root base: views of views point to the root).
    const std::shared_ptr<TensorImpl>& base() const noexcept { return base_; }
    bool is_view() const noexcept { return static_cast<bool>(base_); }
    void set_base(std::shared_ptr<TensorImpl> base) { base_ = std::move(base); }

    // For views: the version counter's value when the view's autograd history was last set
    // (a different current value means an in-place op changed the base since), and why the
    // view was made (autograd::CreationMeta as an integer).
    uint32_t view_attr_version() const noexcept { return view_attr_version_; }
    void set_view_attr_version(uint32_t v) noexcept { view_attr_version_ = v; }
    uint8_t view_creation_meta() const noexcept { return view_creation_meta_; }
    void set_view_creation_meta(uint8_t m) noexcept { view_creation_meta_ = m; }

    autograd::AutogradMeta* autograd_meta() const noexcept { return autograd_meta_.get(); }
    // Creates the autograd metadata on first use.
    autograd::AutogradMeta& ensure_autograd_meta();

private:
    void refresh();

    Storage storage_;
    std::vector<int64_t> sizes_;
    std::vector<int64_t> strides_;
    int64_t storage_offset_ = 0;
    int64_t numel_ = 1;
    ScalarType dtype_;
    bool is_contiguous_ = true;
    uint8_t view_creation_meta_ = 0;
    uint32_t view_attr_version_ = 0;
    std::shared_ptr<VersionCounter> version_;
    std::shared_ptr<TensorImpl> base_;
    std::unique_ptr<autograd::AutogradMeta> autograd_meta_;
};

}  // namespace ember
