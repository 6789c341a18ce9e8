// Buffer and TensorRecord helpers.
#include <cstring>
#include <numeric>

#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/serialize.h"
#include "serialize_test_util.h"

namespace {

using namespace ember_serialize_test;
using ember::ScalarType;

std::vector<float> floats_of(const std::vector<std::byte>& bytes) {
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
}

// A record of `shape` over 0, 1, 2, ... (float32) with the given strides and offset.
es::TensorRecord iota_view(int64_t storage_elems, std::vector<int64_t> shape,
                           std::vector<int64_t> strides, int64_t offset) {
    std::vector<float> data(static_cast<std::size_t>(storage_elems));
    std::iota(data.begin(), data.end(), 0.0f);
    es::TensorRecord r;
    r.dtype = ember::kFloat32;
    r.shape = std::move(shape);
    r.strides = std::move(strides);
    r.storage_offset = offset;
    r.storage = es::Buffer::copy_of(data.data(), data.size() * 4);
    return r;
}

TEST(SerializeBuffer, AllocateIsZeroedAndAligned) {
    auto b = es::Buffer::allocate(100);
    ASSERT_EQ(b->size(), 100u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data()) % 64, 0u);
    for (std::size_t i = 0; i < 100; ++i) EXPECT_EQ(b->data()[i], std::byte{0});
    EXPECT_TRUE(b->writable());
    EXPECT_FALSE(b->is_mapped());
    b->mutable_data()[3] = std::byte{7};
    EXPECT_EQ(b->data()[3], std::byte{7});
    EXPECT_EQ(es::Buffer::allocate(0)->size(), 0u);
}

TEST(SerializeBuffer, SliceSharesMemoryAndOutlivesTheParent) {
    std::shared_ptr<const es::Buffer> slice;
    {
        auto b = es::Buffer::copy_of("abcdefgh", 8);
        slice = b->slice(2, 3);
        EXPECT_EQ(slice->data(), b->data() + 2);
        EXPECT_THROW(b->slice(6, 3), ember::Error);
        EXPECT_THROW(b->slice(9, 0), ember::Error);
        EXPECT_EQ(b->slice(8, 0)->size(), 0u);
    }
    ASSERT_EQ(slice->size(), 3u);
    EXPECT_EQ(std::memcmp(slice->data(), "cde", 3), 0);
}

TEST(SerializeBuffer, WrapKeepsTheOwnerAliveAndConstWrapIsReadOnly) {
    auto owner = std::make_shared<std::vector<int>>(4, 9);
    auto ro = es::Buffer::wrap(static_cast<const void*>(owner->data()), 16, owner);
    auto rw = es::Buffer::wrap(static_cast<void*>(owner->data()), 16, owner, true);
    std::weak_ptr<std::vector<int>> weak = owner;
    owner.reset();
    EXPECT_FALSE(weak.expired());
    EXPECT_FALSE(ro->writable());
    EXPECT_THROW(ro->mutable_data(), ember::Error);
    rw->mutable_data()[0] = std::byte{1};
    EXPECT_EQ(ro->data()[0], std::byte{1});
    ro.reset();
    rw.reset();
    EXPECT_TRUE(weak.expired());
}

TEST(SerializeBuffer, FromVectorAdopts) {
    std::vector<std::byte> v(5, std::byte{3});
    const std::byte* p = v.data();
    auto b = es::Buffer::from_vector(std::move(v));
    EXPECT_EQ(b->data(), p);
    EXPECT_EQ(b->size(), 5u);
}

TEST(SerializeBuffer, ReadAndMapFiles) {
    TempDir dir;
    write_bytes(dir.file("f"), bytes_of("hello"));
    auto r = es::Buffer::read_file(dir.file("f"));
    auto m = es::Buffer::map_file(dir.file("f"));
    ASSERT_EQ(r->size(), 5u);
    ASSERT_EQ(m->size(), 5u);
    EXPECT_EQ(std::memcmp(r->data(), "hello", 5), 0);
    EXPECT_EQ(std::memcmp(m->data(), "hello", 5), 0);
    EXPECT_TRUE(m->is_mapped());
    m->mutable_data()[0] = std::byte{'J'};  // copy-on-write: the file keeps its bytes
    EXPECT_EQ(read_bytes(dir.file("f")), bytes_of("hello"));
    write_bytes(dir.file("empty"), {});
    EXPECT_EQ(es::Buffer::map_file(dir.file("empty"))->size(), 0u);
    try {
        es::Buffer::read_file(dir.file("missing"));
        FAIL() << "no error";
    } catch (const ember::Error& e) {
        EXPECT_NE(std::string(e.what()).find(dir.file("missing") + ": cannot open"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(es::Buffer::read_file(dir.path()), ember::Error);  // a directory
}

TEST(SerializeRecord, ContiguousStrides) {
    EXPECT_EQ(es::contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
    EXPECT_EQ(es::contiguous_strides({}), (std::vector<int64_t>{}));
    EXPECT_EQ(es::contiguous_strides({2, 0, 3}), (std::vector<int64_t>{3, 3, 1}));  // as torch
    EXPECT_EQ(es::contiguous_strides({5}), (std::vector<int64_t>{1}));
}

TEST(SerializeRecord, MakeRecordCopiesAndChecks) {
    float v[6] = {1, 2, 3, 4, 5, 6};
    auto r = es::make_record(ember::kFloat32, {2, 3}, v, true);
    EXPECT_EQ(r.numel(), 6);
    EXPECT_EQ(r.nbytes(), 24u);
    EXPECT_EQ(r.dim(), 2);
    EXPECT_TRUE(r.is_contiguous());
    EXPECT_TRUE(r.requires_grad);
    v[0] = 100;  // a copy
    EXPECT_EQ(floats_of(es::contiguous_bytes(r))[0], 1.0f);
    auto scalar = es::make_record(ember::kInt64, {}, std::vector<int64_t>{42}.data());
    EXPECT_EQ(scalar.numel(), 1);
    EXPECT_EQ(scalar.nbytes(), 8u);
    auto empty = es::make_record(ember::kInt32, {0, 5}, nullptr);
    EXPECT_EQ(empty.numel(), 0);
    EXPECT_TRUE(es::contiguous_bytes(empty).empty());
    EXPECT_THROW(es::make_record(ember::kFloat32, {-1}, v), ember::Error);
    EXPECT_THROW(es::make_record(ember::kFloat32, {3}, es::Buffer::allocate(8)), ember::Error);
    EXPECT_THROW(es::make_record(ember::kFloat32, {int64_t(1) << 62, 8}, v), ember::Error);
}

TEST(SerializeRecord, CheckRecordRejectsInconsistentRecords) {
    auto ok = iota_view(12, {3, 4}, {4, 1}, 0);
    EXPECT_NO_THROW(es::check_record(ok));
    auto bad = ok;
    bad.strides = {1};
    EXPECT_THROW(es::check_record(bad), ember::Error);
    bad = ok;
    bad.storage_offset = 1;  // the last element would be element 12 of 12
    try {
        es::check_record(bad, "w");
        FAIL() << "no error";
    } catch (const ember::Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "w: size [3, 4], stride [4, 1] and storage offset 1 are out of bounds for a "
                  "storage of 12 elements");
    }
    bad = ok;
    bad.strides = {4, -1};
    EXPECT_THROW(es::check_record(bad), ember::Error);
    bad = ok;
    bad.storage.reset();
    EXPECT_THROW(es::check_record(bad), ember::Error);
    bad = ok;
    bad.dtype = static_cast<ScalarType>(42);
    EXPECT_THROW(es::check_record(bad), ember::Error);
    bad = ok;
    bad.strides = {int64_t(1) << 62, int64_t(1) << 62};  // the extent overflows
    EXPECT_THROW(es::check_record(bad), ember::Error);
    auto empty = iota_view(2, {0, 3}, {3, 1}, 2);  // an offset at the end is fine when empty
    EXPECT_NO_THROW(es::check_record(empty));
    empty.storage_offset = 3;
    EXPECT_THROW(es::check_record(empty), ember::Error);
}

TEST(SerializeRecord, ContiguousBytesHonoursStridesAndOffset) {
    // a transposed 3x4 view
    auto t = iota_view(12, {4, 3}, {1, 4}, 0);
    EXPECT_FALSE(t.is_contiguous());
    EXPECT_EQ(floats_of(es::contiguous_bytes(t)),
              (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
    // every other column, from column 1
    auto cols = iota_view(12, {3, 2}, {4, 2}, 1);
    EXPECT_EQ(floats_of(es::contiguous_bytes(cols)), (std::vector<float>{1, 3, 5, 7, 9, 11}));
    // a row (contiguous, with an offset)
    auto row = iota_view(12, {4}, {1}, 8);
    EXPECT_TRUE(row.is_contiguous());
    EXPECT_EQ(floats_of(es::contiguous_bytes(row)), (std::vector<float>{8, 9, 10, 11}));
    // broadcast (stride 0), size-1 dimensions with odd strides, 0-d
    auto bc = iota_view(3, {2, 3}, {0, 1}, 0);
    EXPECT_EQ(floats_of(es::contiguous_bytes(bc)), (std::vector<float>{0, 1, 2, 0, 1, 2}));
    auto ones = iota_view(12, {1, 3, 1}, {99, 4, 7}, 1);
    EXPECT_EQ(floats_of(es::contiguous_bytes(ones)), (std::vector<float>{1, 5, 9}));
    auto scalar = iota_view(12, {}, {}, 5);
    EXPECT_TRUE(scalar.is_contiguous());
    EXPECT_EQ(floats_of(es::contiguous_bytes(scalar)), (std::vector<float>{5}));
    // 3-d, mergeable inner dimensions, then a gap
    auto d3 = iota_view(24, {2, 2, 2}, {12, 2, 1}, 0);
    EXPECT_EQ(floats_of(es::contiguous_bytes(d3)), (std::vector<float>{0, 1, 2, 3, 12, 13, 14, 15}));
    // int16 elements
    std::vector<int16_t> s = {0, 1, 2, 3, 4, 5};
    es::TensorRecord r;
    r.dtype = ember::kInt16;
    r.shape = {3};
    r.strides = {2};
    r.storage = es::Buffer::copy_of(s.data(), 12);
    auto bytes = es::contiguous_bytes(r);
    std::vector<int16_t> got(3);
    std::memcpy(got.data(), bytes.data(), 6);
    EXPECT_EQ(got, (std::vector<int16_t>{0, 2, 4}));
    std::vector<std::byte> small(5);
    EXPECT_THROW(es::copy_contiguous_bytes(r, small.data(), small.size()), ember::Error);
}

}  // namespace
