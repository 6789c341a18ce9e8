// Any object of a PyTorch zip checkpoint as a serialize::Value (read_torch_object,
// write_torch_object): what torch.save writes for dicts with int keys, nested dicts, lists,
// tuples, numbers, strs, None and tensors (an optimizer's state_dict()), both ways.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/serialize.h"
#include "optim_test_cases.h"
#include "serialize_test_util.h"

namespace {

using namespace ember_serialize_test;  // NOLINT
using es::Value;

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "<no error>";
}

es::TensorRecord floats(std::vector<int64_t> shape, std::vector<float> data) {
    return es::make_record(ember::kFloat32, std::move(shape), data.data());
}

// One of each kind, nested as an optimizer's state dict is.
Value sample() {
    Value state = Value::dict();
    state.set(Value::from_int(0), Value::dict()
                                      .set("step", Value::from_tensor(floats({}, {3.0f})))
                                      .set("exp_avg", Value::from_tensor(floats({2, 2}, {1, 2, 3, 4}))));
    state.set(Value::from_int(1), Value::dict());
    std::vector<Value> many;
    for (int i = 0; i < 1001; ++i) many.push_back(Value::from_int(i * 1000003LL));  // two APPENDS batches
    Value group = Value::dict();
    group.set("lr", Value::from_float(1e-3))
        .set("betas", Value::tuple({Value::from_float(0.9), Value::from_float(0.999)}))
        .set("weight_decay", Value::from_int(0))
        .set("amsgrad", Value::from_bool(false))
        .set("maximize", Value::from_bool(true))
        .set("foreach", Value())
        .set("name", Value::from_str("caf\xc3\xa9"))
        .set("params", Value::list({Value::from_int(0), Value::from_int(1)}))
        .set("one", Value::list({Value::from_int(-1)}))
        .set("big", Value::tuple({Value::from_int(std::numeric_limits<int64_t>::min()), Value::from_int(1LL << 40),
                                  Value::from_int(-70000), Value::from_int(65535)}))
        .set("empty", Value::tuple())
        .set("many", Value::list(many));
    Value keyed = Value::dict();
    keyed.set(Value(), Value::from_float(-0.0))
        .set(Value::tuple({Value::from_int(1), Value::from_str("a")}), Value::from_float(INFINITY))
        .set(Value::from_float(2.5), Value::from_bool(true));
    return Value::dict()
        .set("state", std::move(state))
        .set("param_groups", Value::list({std::move(group)}))
        .set("keys", std::move(keyed));
}

TEST(TorchObject, RoundTrip) {
    TempDir dir;
    const Value v = sample();
    es::write_torch_object(dir.file("obj.pt"), v);
    EXPECT_EQ(es::detect_checkpoint_format(dir.file("obj.pt")), es::CheckpointFormat::TorchZip);
    const Value back = es::read_torch_object(dir.file("obj.pt"));
    ember_optim_cases::expect_same_value(v, back, "");
    EXPECT_EQ(back.find("state")->find(int64_t{0})->find("exp_avg")->tensor.shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(back.find("keys")->find(int64_t{1}), nullptr);
    EXPECT_EQ(back.find("nope"), nullptr);
    // a non-contiguous tensor is written packed
    es::TensorRecord t = floats({2, 2}, {1, 2, 3, 4});
    t.strides = {1, 2};
    const Value packed = es::deserialize_torch_object(buffer_of(es::serialize_torch_object(Value::from_tensor(t))));
    EXPECT_EQ(packed.tensor.strides, (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(to_hex(es::contiguous_bytes(packed.tensor)), to_hex(es::contiguous_bytes(t)));
    // a state dict that write_torch_checkpoint wrote reads as a dict (of its OrderedDict)
    es::TensorRecords records;
    records.emplace_back("w", floats({1}, {5}));
    es::write_torch_checkpoint(dir.file("sd.pt"), records);
    const Value sd = es::read_torch_object(dir.file("sd.pt"));
    ASSERT_EQ(sd.dict_size(), 1u);
    EXPECT_EQ(sd.key(0).text, "w");
}

TEST(TorchObject, WriteErrors) {
    const Value dup = Value::dict().set(Value::from_int(1), Value()).set(Value::from_float(1.0), Value());
    EXPECT_EQ(error_of([&] { es::serialize_torch_object(dup); }),
              "serialize_torch_object: a dict whose key 1 (a float) equals an earlier one");
    const Value list_key = Value::dict().set(Value::list(), Value());
    EXPECT_EQ(error_of([&] { es::serialize_torch_object(list_key); }),
              "serialize_torch_object: a dict key of type list (unhashable in Python)");
    EXPECT_EQ(error_of([&] { es::serialize_torch_object(Value::from_str("\xff")); }),
              std::string("serialize_torch_object: the str '\xff' is not valid UTF-8"));  // quoted as it is
    Value deep;
    for (int i = 0; i < 600; ++i) deep = Value::list({deep});
    EXPECT_EQ(error_of([&] { es::serialize_torch_object(deep); }),
              "serialize_torch_object: the object is nested more than 500 levels deep");
}

TEST(TorchObject, ReadErrors) {
    auto read = [](const PickleWriter& p) {
        return error_of([&] { es::deserialize_torch_object(buffer_of(make_checkpoint(p.bytes(), {})), "x.pt"); });
    };
    PickleWriter set;  // builtins.set([1])
    set.proto().global("builtins", "set").op(']').integer(1).op('a').op('\x85').op('R').op('.');
    EXPECT_EQ(read(set), "x.pt: the checkpoint is a set, which a checkpoint of None, bool, int, float, str, "
                         "tuple, list, dict and tensors cannot hold");
    PickleWriter nested;  // {'a': [complex(1, 2)]}
    nested.proto().op('}').str("a").op(']').global("builtins", "complex").integer(1).integer(2).op('\x86').op('R');
    nested.op('a').op('s').op('.');
    EXPECT_EQ(read(nested), "x.pt: the object at ['a'][0] is a complex, which a checkpoint of None, bool, int, "
                            "float, str, tuple, list, dict and tensors cannot hold");
    PickleWriter cycle;  // l = []; l.append(l)
    cycle.proto().op(']').op('q').byte(0).op('h').byte(0).op('a').op('.');
    EXPECT_NE(read(cycle).find("is nested more than 500 levels deep"), std::string::npos) << read(cycle);
    PickleWriter bomb;  // l0 = [], l(k+1) = [lk, lk]: 2^60 leaves in a few hundred bytes
    bomb.proto().op(']');
    for (int k = 0; k < 60; ++k) bomb.op('q').byte(0).op('(').op('h').byte(0).op('h').byte(0).op('l');
    bomb.op('.');
    EXPECT_NE(read(bomb).find("share containers so that they expand to more than"), std::string::npos) << read(bomb);
}

TEST(TorchObject, PythonReadsWhatCppWrites) {
    const std::string python = test_python();
    if (python.empty()) GTEST_SKIP() << "no Python with ember and torch (see TorchWriter.PythonReadsWhatCppWrites)";
    TempDir dir;
    Value v = sample();
    v.items.at(3).items.at(0).items.pop_back();  // drop "many" and its 1001 ints from the repr
    v.items.at(3).items.at(0).items.pop_back();
    es::write_torch_object(dir.file("obj.pt"), v);
    for (const char* module : {"torch", "ember"}) {
        std::string out;
        const int rc = run_command(python + " -c \"import " + module + ", sys; o = " + module + ".load(sys.argv[1], " +
                                       "weights_only=True); s = o['state'][0]; print(o['param_groups'], o['keys'], " +
                                       "s['step'].dtype, s['step'].shape, s['exp_avg'].tolist())\" '" +
                                       dir.file("obj.pt") + "' 2>&1",
                                   &out);
        ASSERT_EQ(rc, 0) << out;
        const std::string prefix = std::string(module) + ".";
        EXPECT_EQ(out, "[{'lr': 0.001, 'betas': (0.9, 0.999), 'weight_decay': 0, 'amsgrad': False, 'maximize': True, "
                       "'foreach': None, 'name': 'caf\xc3\xa9', 'params': [0, 1], 'one': [-1], 'big': "
                       "(-9223372036854775808, 1099511627776, -70000, 65535), 'empty': ()}] {None: -0.0, (1, 'a'): "
                       "inf, 2.5: True} " + prefix + "float32 " + prefix + "Size([]) [[1.0, 2.0], [3.0, 4.0]]\n");
    }
}

}  // namespace
