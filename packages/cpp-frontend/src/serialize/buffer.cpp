// Buffer and the TensorRecord helpers of include/ember/serialize.h.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "ember/serialize.h"
#include "serialize/common.h"
#include "serialize/file_io.h"

namespace ember::serialize {

using detail::checked_add;
using detail::checked_mul;

namespace {

constexpr std::size_t kAlignment = 64;

struct AlignedDelete {
    void operator()(void* p) const noexcept { ::operator delete(p, std::align_val_t{kAlignment}); }
};

// `nbytes` bytes (zeroed when `zero`), 64-byte aligned, owned by the returned pointer.
std::shared_ptr<void> aligned_bytes(std::size_t nbytes, bool zero) {
    std::size_t n = nbytes == 0 ? 1 : nbytes;
    std::shared_ptr<void> owner(::operator new(n, std::align_val_t{kAlignment}), AlignedDelete{});
    if (zero) std::memset(owner.get(), 0, n);
    return owner;
}

struct Mapping {
    void* addr = nullptr;
    std::size_t size = 0;
    Mapping(void* a, std::size_t s) noexcept : addr(a), size(s) {}
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
        if (addr != nullptr) ::munmap(addr, size);
    }
};

bool known_dtype(ScalarType t) noexcept {
    switch (t) {
        case ScalarType::Byte:
        case ScalarType::Char:
        case ScalarType::Short:
        case ScalarType::Int:
        case ScalarType::Long:
        case ScalarType::Half:
        case ScalarType::Float:
        case ScalarType::Double:
        case ScalarType::ComplexFloat:
        case ScalarType::ComplexDouble:
        case ScalarType::Bool:
            return true;
    }
    return false;
}

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(std::size_t nbytes) {
    auto owner = aligned_bytes(nbytes, true);
    auto* data = static_cast<std::byte*>(owner.get());
    return std::make_shared<Buffer>(Token{}, data, nbytes, std::move(owner), true, false);
}

std::shared_ptr<Buffer> Buffer::copy_of(const void* data, std::size_t nbytes) {
    auto buf = allocate(nbytes);
    if (nbytes != 0) std::memcpy(buf->data_, data, nbytes);
    return buf;
}

std::shared_ptr<Buffer> Buffer::from_vector(std::vector<std::byte> bytes) {
    auto owner = std::make_shared<std::vector<std::byte>>(std::move(bytes));
    std::byte* data = owner->data();
    std::size_t size = owner->size();
    return std::make_shared<Buffer>(Token{}, data, size, std::move(owner), true, false);
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, std::size_t nbytes,
                                     std::shared_ptr<const void> owner, bool writable) {
    EMBER_CHECK(data != nullptr || nbytes == 0, "Buffer::wrap: null data for ", nbytes,
                " bytes");
    return std::make_shared<Buffer>(Token{}, static_cast<std::byte*>(data), nbytes,
                                    std::move(owner), writable, false);
}

std::shared_ptr<const Buffer> Buffer::wrap(const void* data, std::size_t nbytes,
                                           std::shared_ptr<const void> owner) {
    return wrap(const_cast<void*>(data), nbytes, std::move(owner), false);
}

std::shared_ptr<Buffer> Buffer::read_file(const std::string& path) {
    std::size_t size = 0;
    detail::UniqueFd fd = detail::open_for_reading(path, &size);
    auto owner = aligned_bytes(size, false);  // every byte is read next
    auto* data = static_cast<std::byte*>(owner.get());
    detail::read_exact(fd.get(), path, 0, data, size);
    return std::make_shared<Buffer>(Token{}, data, size, std::move(owner), true, false);
}

std::shared_ptr<Buffer> Buffer::map_file(const std::string& path) {
    std::size_t size = 0;
    detail::UniqueFd fd = detail::open_for_reading(path, &size);
    if (size == 0) return allocate(0);  // mmap cannot map nothing
    void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
    if (addr == MAP_FAILED) detail::fail(path, "cannot map the file: ", detail::errno_message(errno));
    auto mapping = std::make_shared<Mapping>(addr, size);
    return std::make_shared<Buffer>(Token{}, static_cast<std::byte*>(addr), size,
                                    std::move(mapping), true, true);
}

std::byte* Buffer::mutable_data() const {
    EMBER_CHECK(writable_, "this Buffer is read-only (it wraps const memory)");
    return data_;
}

std::shared_ptr<const Buffer> Buffer::slice(std::size_t offset, std::size_t nbytes) const {
    EMBER_CHECK(offset <= size_ && nbytes <= size_ - offset, "Buffer::slice: bytes [", offset,
                ", ", offset, " + ", nbytes, ") are outside a buffer of ", size_, " bytes");
    return std::make_shared<Buffer>(Token{}, data_ == nullptr ? nullptr : data_ + offset, nbytes,
                                    owner_, writable_, mapped_);
}

// ------------------------------------------------------------------------ TensorRecord

int64_t TensorRecord::numel() const noexcept {
    uint64_t n = 1;  // unsigned: an unchecked record may overflow, without undefined behaviour
    for (int64_t s : shape) n *= static_cast<uint64_t>(s);
    return static_cast<int64_t>(n);
}

std::size_t TensorRecord::nbytes() const noexcept {
    return static_cast<std::size_t>(numel()) * element_size(dtype);
}

bool TensorRecord::is_contiguous() const noexcept {
    if (strides.size() != shape.size()) return false;
    int64_t expected = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        if (shape[i] == 0) return true;
        if (shape[i] != 1 && strides[i] != expected) return false;
        if (__builtin_mul_overflow(expected, shape[i], &expected)) return false;
    }
    return true;
}

const std::byte* TensorRecord::data() const noexcept {
    if (!storage || storage->data() == nullptr) return nullptr;
    return storage->data() + static_cast<std::size_t>(storage_offset) * element_size(dtype);
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
    // (Shapes too large for memory saturate at INT64_MAX rather than overflow: such a
    // record fails check_record anyway.)
    std::vector<int64_t> strides(shape.size());
    int64_t s = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        strides[i] = s;
        if (__builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s)) s = INT64_MAX;
    }
    return strides;
}

TensorRecord make_record(ScalarType dtype, std::vector<int64_t> shape, const void* data,
                         bool requires_grad) {
    TensorRecord r;
    r.dtype = dtype;
    r.shape = std::move(shape);
    r.strides = contiguous_strides(r.shape);
    r.requires_grad = requires_grad;
    uint64_t numel = 1, n = 0;
    bool ok = known_dtype(dtype);
    for (int64_t s : r.shape) ok = ok && s >= 0 && checked_mul(numel, uint64_t(s), &numel);
    ok = ok && numel <= uint64_t(INT64_MAX) && checked_mul(numel, element_size(dtype), &n);
    if (!ok) check_record(r, "make_record");  // throws, saying what is wrong
    EMBER_CHECK(data != nullptr || n == 0, "make_record: null data for ", n, " bytes");
    r.storage = Buffer::copy_of(data, static_cast<std::size_t>(n));
    check_record(r, "make_record");
    return r;
}

TensorRecord make_record(ScalarType dtype, std::vector<int64_t> shape,
                         std::shared_ptr<const Buffer> storage, bool requires_grad) {
    TensorRecord r;
    r.dtype = dtype;
    r.shape = std::move(shape);
    r.strides = contiguous_strides(r.shape);
    r.storage = std::move(storage);
    r.requires_grad = requires_grad;
    check_record(r, "make_record");
    return r;
}

void check_record(const TensorRecord& r, const std::string& what) {
    using detail::fail;
    if (!known_dtype(r.dtype)) {
        fail(what, "unknown dtype code ", static_cast<int>(r.dtype));
    }
    if (r.shape.size() != r.strides.size()) {
        fail(what, "has ", r.shape.size(), " dimensions but ", r.strides.size(), " strides");
    }
    if (r.storage_offset < 0) fail(what, "negative storage offset ", r.storage_offset);
    uint64_t numel = 1, extent = 0;  // extent: the last element's index past the offset
    bool empty = false, overflow = false;
    for (std::size_t i = 0; i < r.shape.size(); ++i) {
        if (r.shape[i] < 0) fail(what, "negative size ", r.shape[i], " in dimension ", i);
        if (r.strides[i] < 0) fail(what, "negative stride ", r.strides[i], " in dimension ", i);
        if (r.shape[i] == 0) empty = true;
        overflow |= !checked_mul(numel, static_cast<uint64_t>(r.shape[i]), &numel);
    }
    uint64_t itemsize = element_size(r.dtype), total = 0;
    if (overflow || numel > static_cast<uint64_t>(INT64_MAX) ||
        !checked_mul(numel, itemsize, &total)) {
        fail(what, "has too many elements (the sizes overflow)");
    }
    uint64_t storage_elems = r.storage ? r.storage->size() / itemsize : 0;
    if (empty) {
        // PyTorch checks only that the offset is within the storage for an empty tensor.
        if (r.storage_offset != 0 && static_cast<uint64_t>(r.storage_offset) > storage_elems) {
            fail(what, "storage offset ", r.storage_offset, " is past the end of a storage of ",
                 storage_elems, " elements");
        }
        return;
    }
    for (std::size_t i = 0; i < r.shape.size(); ++i) {
        uint64_t step = 0;
        overflow |= !checked_mul(static_cast<uint64_t>(r.shape[i] - 1),
                                 static_cast<uint64_t>(r.strides[i]), &step);
        overflow |= !checked_add(extent, step, &extent);
    }
    overflow |= !checked_add(extent, static_cast<uint64_t>(r.storage_offset), &extent);
    if (!r.storage) fail(what, "has ", numel, " elements but no storage");
    if (overflow || extent >= storage_elems) {
        std::string shape, strides;
        for (std::size_t i = 0; i < r.shape.size(); ++i) {
            shape += (i ? ", " : "") + std::to_string(r.shape[i]);
            strides += (i ? ", " : "") + std::to_string(r.strides[i]);
        }
        fail(what, "size [", shape, "], stride [", strides, "] and storage offset ",
             r.storage_offset, " are out of bounds for a storage of ", storage_elems,
             " elements");
    }
}

void copy_contiguous_bytes(const TensorRecord& r, std::byte* out, std::size_t out_size) {
    check_record(r, "copy_contiguous_bytes");
    std::size_t total = r.nbytes();
    EMBER_CHECK(out_size == total, "copy_contiguous_bytes: the output holds ", out_size,
                " bytes, the record ", total);
    if (total == 0) return;
    const std::size_t item = element_size(r.dtype);
    const std::byte* base = r.data();
    if (r.is_contiguous()) {
        std::memcpy(out, base, total);
        return;
    }
    // Coalesce: drop size-1 dimensions, merge dimensions that are contiguous to each other.
    std::vector<int64_t> sizes, strides;
    for (std::size_t i = 0; i < r.shape.size(); ++i) {
        if (r.shape[i] == 1) continue;
        if (!sizes.empty() && strides.back() == r.strides[i] * r.shape[i]) {
            sizes.back() *= r.shape[i];
            strides.back() = r.strides[i];
        } else {
            sizes.push_back(r.shape[i]);
            strides.push_back(r.strides[i]);
        }
    }
    // The innermost run: one memcpy when its stride is 1, else element by element.
    std::size_t nd = sizes.size();
    const int64_t inner = sizes[nd - 1], inner_stride = strides[nd - 1];
    std::vector<int64_t> index(nd, 0);
    std::size_t pos = 0;
    int64_t offset = 0;  // in elements from base
    for (;;) {
        if (inner_stride == 1) {
            std::memcpy(out + pos, base + offset * item, static_cast<std::size_t>(inner) * item);
            pos += static_cast<std::size_t>(inner) * item;
        } else {
            for (int64_t k = 0; k < inner; ++k) {
                std::memcpy(out + pos, base + (offset + k * inner_stride) * item, item);
                pos += item;
            }
        }
        std::size_t d = nd - 1;
        for (;;) {
            if (d == 0) return;
            --d;
            if (++index[d] < sizes[d]) {
                offset += strides[d];
                break;
            }
            offset -= strides[d] * (sizes[d] - 1);
            index[d] = 0;
        }
    }
}

std::vector<std::byte> contiguous_bytes(const TensorRecord& r) {
    check_record(r, "contiguous_bytes");
    std::vector<std::byte> out(r.nbytes());
    copy_contiguous_bytes(r, out.data(), out.size());
    return out;
}

}  // namespace ember::serialize
