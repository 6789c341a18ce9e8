// ember::Storage: the memory behind tensors. A storage is shared (reference counted) by a
// tensor and all its views; memory Ember allocates is 64-byte aligned. A storage made from
// a caller's pointer (from_blob) does not own it unless it was given a deleter.
#pragma once

#include "export.h"
#include <cstddef>
#include <functional>
#include <memory>

namespace ember {

class EMBER_API StorageImpl {
public:
    using Deleter = std::function<void(void*)>;

    // Allocates nbytes (64-byte aligned; zero-filled when zero is true).
    explicit StorageImpl(std::size_t nbytes, bool zero = false);
    // Wraps external memory; deleter (may be empty: not owned) is called on destruction.
    StorageImpl(void* data, std::size_t nbytes, Deleter deleter);
    ~StorageImpl();
    StorageImpl(const StorageImpl&) = delete;
    StorageImpl& operator=(const StorageImpl&) = delete;

    void* data() const noexcept { return data_; }
    std::size_t nbytes() const noexcept { return nbytes_; }
    // Whether Ember allocated this memory (false for from_blob).
    bool owns_memory() const noexcept { return owned_; }

private:
    void* data_ = nullptr;
    std::size_t nbytes_ = 0;
    Deleter deleter_;
    bool owned_ = false;
};

class Storage {
public:
    Storage() = default;
    explicit Storage(std::shared_ptr<StorageImpl> impl) : impl_(std::move(impl)) {}

    // A new 64-byte aligned buffer of nbytes bytes (zero-filled when zero is true).
    static Storage allocate(std::size_t nbytes, bool zero = false) {
        return Storage(std::make_shared<StorageImpl>(nbytes, zero));
    }
    // External memory; not owned unless deleter is non-empty.
    static Storage from_blob(void* data, std::size_t nbytes, StorageImpl::Deleter deleter = {}) {
        return Storage(std::make_shared<StorageImpl>(data, nbytes, std::move(deleter)));
    }

    bool defined() const noexcept { return static_cast<bool>(impl_); }
    void* data() const noexcept { return impl_ ? impl_->data() : nullptr; }
    std::size_t nbytes() const noexcept { return impl_ ? impl_->nbytes() : 0; }
    long use_count() const noexcept { return impl_.use_count(); }
    bool is_alias_of(const Storage& other) const noexcept { return impl_ == other.impl_; }
    StorageImpl* unsafeGetStorageImpl() const noexcept { return impl_.get(); }

private:
    std::shared_ptr<StorageImpl> impl_;
};

}  // namespace ember
