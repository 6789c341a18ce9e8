#include "ember/storage.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace ember {

namespace {
constexpr std::size_t kAlignment = 64;
}

StorageImpl::StorageImpl(std::size_t nbytes, bool zero) : nbytes_(nbytes), owned_(true) {
    // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
    const std::size_t padded = ((nbytes + kAlignment - 1) / kAlignment) * kAlignment;
    data_ = std::aligned_alloc(kAlignment, padded == 0 ? kAlignment : padded);
    if (data_ == nullptr) throw std::bad_alloc();
    if (zero && nbytes) std::memset(data_, 0, nbytes);
}

StorageImpl::StorageImpl(void* data, std::size_t nbytes, Deleter deleter)
    : data_(data), nbytes_(nbytes), deleter_(std::move(deleter)), owned_(false) {}

StorageImpl::~StorageImpl() {
    if (owned_) {
        std::free(data_);
    } else if (deleter_) {
        try {
            deleter_(data_);
        } catch (...) {  // a deleter must not throw out of a destructor
        }
    }
}

}  // namespace ember
