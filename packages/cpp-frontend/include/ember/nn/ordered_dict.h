// ember::OrderedDict<Key, Value>: a dict that remembers insertion order (libtorch's
// torch::OrderedDict), the type of Module::named_parameters(), named_buffers(),
// named_children() and named_modules().
//
//   for (const auto& item : model->named_parameters()) {
//       std::cout << item.key() << ": " << item.value().sizes() << "\n";
//   }
//   ember::Tensor w = model->named_parameters()["fc.weight"];
//
// Items live in a std::vector in insertion order, with a hash index from key to position:
// lookup by key or by position is O(1), iteration is in insertion order. Inserting may move
// the items (as a vector does), so keep copies of values, not references, across inserts.
// A missing or duplicate key throws ember::Error naming the key with the dict's key
// description ("Parameter 'weight' is not defined", "Submodule 'fc' is already defined").
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../error.h"

namespace ember {

template <typename Key, typename Value>
class OrderedDict {
public:
    // A (key, value) pair of the dict.
    class Item {
    public:
        Item(Key key, Value value) : pair_(std::move(key), std::move(value)) {}
        Value& operator*() { return value(); }
        const Value& operator*() const { return value(); }
        Value* operator->() { return &value(); }
        const Value* operator->() const { return &value(); }
        const Key& key() const noexcept { return pair_.first; }
        Value& value() noexcept { return pair_.second; }
        const Value& value() const noexcept { return pair_.second; }
        const std::pair<Key, Value>& pair() const noexcept { return pair_; }

    private:
        std::pair<Key, Value> pair_;
    };

    using Iterator = typename std::vector<Item>::iterator;
    using ConstIterator = typename std::vector<Item>::const_iterator;

    // key_description names the keys in error messages ("Parameter", "Buffer", ...).
    explicit OrderedDict(std::string key_description = "Key")
        : key_description_(std::move(key_description)) {}
    OrderedDict(std::initializer_list<Item> items) : OrderedDict("Key") {
        items_.reserve(items.size());
        for (const Item& item : items) insert(item.key(), item.value());
    }

    const std::string& key_description() const noexcept { return key_description_; }

    // ---- access --------------------------------------------------------------------------
    Item& front() { return at_position(0); }
    const Item& front() const { return const_cast<OrderedDict*>(this)->at_position(0); }
    Item& back() { return at_position(items_.empty() ? 0 : items_.size() - 1); }
    const Item& back() const { return const_cast<OrderedDict*>(this)->back(); }
    // The item at a position (insertion order).
    Item& operator[](std::size_t index) { return at_position(index); }
    const Item& operator[](std::size_t index) const { return const_cast<OrderedDict*>(this)->at_position(index); }
    // The value of a key (an error when the key is missing).
    Value& operator[](const Key& key) {
        Value* v = find(key);
        EMBER_CHECK(v != nullptr, key_description_, " '", key, "' is not defined");
        return *v;
    }
    const Value& operator[](const Key& key) const { return (*const_cast<OrderedDict*>(this))[key]; }
    // The value of a key, or nullptr.
    Value* find(const Key& key) noexcept {
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &items_[it->second].value();
    }
    const Value* find(const Key& key) const noexcept { return const_cast<OrderedDict*>(this)->find(key); }
    bool contains(const Key& key) const noexcept { return index_.count(key) != 0; }

    Iterator begin() noexcept { return items_.begin(); }
    ConstIterator begin() const noexcept { return items_.begin(); }
    Iterator end() noexcept { return items_.end(); }
    ConstIterator end() const noexcept { return items_.end(); }

    std::size_t size() const noexcept { return items_.size(); }
    bool is_empty() const noexcept { return items_.empty(); }
    bool empty() const noexcept { return items_.empty(); }
    void reserve(std::size_t n) {
        items_.reserve(n);
        index_.reserve(n);
    }

    // ---- modification --------------------------------------------------------------------
    // Appends (key, value); an error if the key exists. Returns the stored value.
    Value& insert(Key key, Value value) {
        EMBER_CHECK(index_.count(key) == 0, key_description_, " '", key, "' is already defined");
        index_.emplace(key, items_.size());
        items_.emplace_back(std::move(key), std::move(value));
        return items_.back().value();
    }
    // Inserts every item of other (an error on a duplicate key).
    void update(const OrderedDict& other) {
        reserve(size() + other.size());
        for (const Item& item : other) insert(item.key(), item.value());
    }
    // Removes a key (an error when it is missing); later items move up one position.
    void erase(const Key& key) {
        auto it = index_.find(key);
        EMBER_CHECK(it != index_.end(), key_description_, " '", key, "' is not defined");
        const std::size_t pos = it->second;
        index_.erase(it);
        items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(pos));
        for (auto& entry : index_) {
            if (entry.second > pos) --entry.second;
        }
    }
    void clear() {
        items_.clear();
        index_.clear();
    }

    // ---- views ---------------------------------------------------------------------------
    const std::vector<Item>& items() const noexcept { return items_; }
    std::vector<Key> keys() const {
        std::vector<Key> out;
        out.reserve(items_.size());
        for (const Item& item : items_) out.push_back(item.key());
        return out;
    }
    std::vector<Value> values() const {
        std::vector<Value> out;
        out.reserve(items_.size());
        for (const Item& item : items_) out.push_back(item.value());
        return out;
    }
    std::vector<std::pair<Key, Value>> pairs() const {
        std::vector<std::pair<Key, Value>> out;
        out.reserve(items_.size());
        for (const Item& item : items_) out.push_back(item.pair());
        return out;
    }

private:
    Item& at_position(std::size_t index) {
        EMBER_CHECK_INDEX(index < items_.size(), "Index ", index, " is out of bounds for an OrderedDict of size ",
                          items_.size());
        return items_[index];
    }

    std::unordered_map<Key, std::size_t> index_;
    std::vector<Item> items_;
    std::string key_description_;
};

}  // namespace ember
