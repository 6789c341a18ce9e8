// The restricted unpickler: malicious and malformed pickles are refused, nothing is run,
// and no length read from the file is trusted.
#include <unistd.h>

#include <cstring>
#include <functional>

#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/serialize.h"
#include "serialize_test_util.h"

namespace {

using namespace ember_serialize_test;

std::string pickle_error(const std::string& pickle,
                         const std::map<std::string, std::vector<std::byte>>& storages = {}) {
    auto archive = make_checkpoint(pickle, storages);
    try {
        es::deserialize_torch_checkpoint(buffer_of(archive), "evil.pt");
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "<no error>";
}

void expect_refused(const std::string& pickle, const std::string& part) {
    std::string got = pickle_error(pickle);
    EXPECT_NE(got.find(part), std::string::npos) << got;
    EXPECT_EQ(got.rfind("evil.pt: ", 0), 0u) << got;
}

TEST(PickleSecurity, RefusesGlobalsOutsideTheAllowList) {
    const std::string marker = "/tmp/ember_serialize_test_pwned_" + std::to_string(::getpid());
    // os.system("touch <marker>") as pickle.dumps writes it (posix.system on Linux)
    PickleWriter p;
    p.proto().global("posix", "system").mark().str("touch " + marker).op('t').op('R').op('.');
    std::string got = pickle_error(p.bytes());
    EXPECT_NE(got.find("evil.pt: data.pkl: unsupported global 'posix.system': module 'posix' is blocked (allowed: "
                       "collections.OrderedDict"),
              std::string::npos)
        << got;
    EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the pickle ran";

    PickleWriter os_system;
    os_system.proto().global("os", "system").str("true").op('\x85').op('R').op('.');
    expect_refused(os_system.bytes(), "unsupported global 'os.system': module 'os' is blocked");

    PickleWriter eval;  // protocol 2 names builtins __builtin__
    eval.proto().global("__builtin__", "eval").str("1+1").op('\x85').op('R').op('.');
    expect_refused(eval.bytes(), "unsupported global 'builtins.eval' (allowed: ");

    PickleWriter exec;  // protocol 4: STACK_GLOBAL
    exec.proto(4).raw("\x8c\x08" "builtins").raw("\x8c\x04" "exec").op('\x93').str("x").op('\x85').op('R').op('.');
    expect_refused(exec.bytes(), "unsupported global 'builtins.exec'");

    PickleWriter popen;
    popen.proto().global("subprocess", "Popen").op('.');
    expect_refused(popen.bytes(), "unsupported global 'subprocess.Popen'");

    PickleWriter sys_modules;
    sys_modules.proto().global("sys", "modules").op('.');
    expect_refused(sys_modules.bytes(), "module 'sys' is blocked");

    PickleWriter getattr_;
    getattr_.proto().global("builtins", "getattr").op('.');
    expect_refused(getattr_.bytes(), "unsupported global 'builtins.getattr'");

    PickleWriter torch_load;  // a torch function that is not a rebuild function
    torch_load.proto().global("torch", "load").op('.');
    expect_refused(torch_load.bytes(), "unsupported global 'torch.load'");
}

TEST(PickleSecurity, CallsOnlyAllowListedCallables) {
    PickleWriter storage_call;  // an allowed global that is a value, not a callable
    storage_call.proto().global("torch", "FloatStorage").op(')').op('R').op('.');
    expect_refused(storage_call.bytes(), "Trying to call reduce for unrecognized function torch.FloatStorage");

    PickleWriter dtype_call;
    dtype_call.proto().global("torch", "float32").op(')').op('R').op('.');
    expect_refused(dtype_call.bytes(), "unrecognized function torch.float32");

    PickleWriter str_call;
    str_call.proto().str("os.system").op(')').op('R').op('.');
    expect_refused(str_call.bytes(), "unrecognized function 'os.system'");

    PickleWriter tensor_new;  // NEWOBJ of torch.Tensor
    tensor_new.proto().global("torch", "Tensor").op(')').op('\x81').op('.');
    expect_refused(tensor_new.bytes(), "Can only create new object for nn.Parameter");

    PickleWriter args_not_tuple;
    args_not_tuple.proto().global("collections", "OrderedDict").op(']').op('R').op('.');
    expect_refused(args_not_tuple.bytes(), "REDUCE arguments must be a tuple");

    PickleWriter encode_bytes;  // _codecs.encode only for text, in latin1/utf-8
    encode_bytes.proto().global("_codecs", "encode").str("x").str("rot13").op('\x86').op('R').op('.');
    expect_refused(encode_bytes.bytes(), "_codecs.encode is only allowed for text");

    PickleWriter rebuild_bad_storage;
    rebuild_bad_storage.proto().global("torch._utils", "_rebuild_tensor_v2").mark().str("not a storage")
        .integer(0).ints({1}).ints({1}).op('t').op('R').op('.');
    expect_refused(rebuild_bad_storage.bytes(), "expected a storage, got str");
}

TEST(PickleSecurity, RefusesOpcodesThatRunCodeOtherwise) {
    expect_refused(std::string("\x80\x02(X\x01\x00\x00\x00xo.", 11), "unsupported pickle opcode 'o' (OBJ");
    expect_refused(std::string("\x80\x02(X\x01\x00\x00\x00xi", 10) + "a\nb\n.", "unsupported pickle opcode 'i' (INST");
    expect_refused(std::string("\x80\x04)}\x92.", 6), "NEWOBJ_EX");
    expect_refused(std::string("\x80\x02\x82\x01.", 5), "EXT");
    expect_refused(std::string("\x80\x05\x97.", 4), "out-of-band buffer");
    expect_refused(std::string("\x80\x02N0N.", 6), "POP");
    expect_refused(std::string("\x80\x02N2.", 5), "POP");
    expect_refused(std::string("\x80\x02\xff.", 4), "invalid pickle opcode 0xff");
    expect_refused(std::string("\x80\x09N.", 4), "unsupported pickle protocol: 9");
}

TEST(PickleSecurity, BuildSetsStateOnlyWhereAllowed) {
    PickleWriter on_dict;  // BUILD on a plain dict
    on_dict.proto().op('}').op('}').op('b').op('.');
    expect_refused(on_dict.bytes(), "Can only build Tensor, Parameter or OrderedDict, but got dict");

    PickleWriter on_global;  // BUILD on a shared object (a dtype)
    on_global.proto().global("torch", "float32").op('}').op('b').op('.');
    expect_refused(on_global.bytes(), "Can only build Tensor, Parameter or OrderedDict, but got torch.float32");

    PickleWriter bad_state;  // an OrderedDict's state must be a dict (or a pair of dicts)
    bad_state.proto().global("collections", "OrderedDict").op(')').op('R').str("x").op('b').op('.');
    expect_refused(bad_state.bytes(), "invalid object state of type str");

    PickleWriter appends_to_str;
    appends_to_str.proto().str("x").mark().op('N').op('e').op('.');
    expect_refused(appends_to_str.bytes(), "Can only extend lists, but got str");

    PickleWriter setitem_on_list;
    setitem_on_list.proto().op(']').str("k").op('N').op('s').op('.');
    expect_refused(setitem_on_list.bytes(), "Can only SETITEM for dict");

    PickleWriter unhashable;
    unhashable.proto().op('}').op(']').op('N').op('s').op('.');
    expect_refused(unhashable.bytes(), "unhashable type: 'list'");
}

TEST(PickleSecurity, PersistentIdsMustBeStorages) {
    PickleWriter module_pid;  // legacy files' ('module', ...) ids run source checks: refused
    module_pid.proto().mark().str("module").op('N').str("x").str("y").op('t').op('Q').op('.');
    expect_refused(module_pid.bytes(), "Only persistent_load of storage is allowed, but got 'module'");

    PickleWriter short_pid;
    short_pid.proto().mark().str("storage").op('t').op('Q').op('.');
    expect_refused(short_pid.bytes(), "Unknown saved id");

    PickleWriter bad_type;
    bad_type.proto().mark().str("storage").str("FloatStorage").str("0").str("cpu").integer(1).op('t').op('Q').op('.');
    expect_refused(bad_type.bytes(), "invalid storage type 'FloatStorage'");

    PickleWriter negative;
    negative.proto().mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu")
        .integer(-1).op('t').op('Q').op('.');
    expect_refused(negative.bytes(), "invalid storage record: numel -1");

    expect_refused(std::string("\x80\x02P0\n.", 6), "Unknown saved id");
}

TEST(PickleSecurity, LengthsAreCheckedBeforeAnythingIsAllocated) {
    expect_refused(std::string("\x80\x02X\xff\xff\xff\xff", 7), "pickle data was truncated");
    expect_refused(std::string("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f", 11), "pickle data was truncated");
    expect_refused(std::string("\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x10", 11), "pickle data was truncated");
    expect_refused(std::string("\x80\x02\x8b\xff\xff\xff\x7f", 7), "pickle data was truncated");
    expect_refused(std::string("\x80\x02\x8b\xff\xff\xff\xff", 7), "negative byte count");
    expect_refused(std::string("\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\xff", 11), "invalid FRAME");
    expect_refused(std::string("\x80\x02Nr\xff\xff\xff\xff.", 9), "invalid pickle memo index 4294967295");
    expect_refused(std::string("\x80\x02j\xff\xff\xff\x7f.", 8), "memo value not found at index 2147483647");
    expect_refused(std::string("\x80\x02", 2), "ran out of input");
    expect_refused(std::string("\x80\x02.", 3), "stack underflow");
    expect_refused(std::string("\x80\x02(.", 4), "stack underflow");  // STOP cannot see below a MARK
    expect_refused(std::string("\x80\x02t.", 4), "could not find MARK");
    expect_refused(std::string(20000, '('), "pickle nesting is too deep");
}

TEST(PickleSecurity, RepeatedCopiesHitTheMemoryBudget) {
    // d = {0: None, ..., 999: None}; then OrderedDict(d) 200,000 times (each a copy of d)
    PickleWriter p;
    p.proto().op('}').raw("q").byte(0).mark();
    for (int i = 0; i < 1000; ++i) p.integer(i).op('N');
    p.op('u');
    p.global("collections", "OrderedDict").raw("q").byte(1);
    for (int i = 0; i < 200000; ++i) p.raw("h").byte(1).raw("h").byte(0).op('\x85').op('R');
    p.op('.');
    std::string got = pickle_error(p.bytes());
    EXPECT_NE(got.find("MiB of memory"), std::string::npos) << got.substr(0, 300);
}

TEST(PickleSecurity, CyclesAndDeepNestsNeitherCrashNorLeak) {
    // a list that contains itself, and a 200,000-deep nest of lists
    PickleWriter cycle;
    cycle.proto().op(']').raw("q").byte(0).raw("h").byte(0).op('a').op('.');
    EXPECT_NE(pickle_error(cycle.bytes()).find("is a list, not a state dict"), std::string::npos);
    PickleWriter deep;
    deep.proto();
    for (int i = 0; i < 200000; ++i) deep.op(']');
    for (int i = 0; i < 199999; ++i) deep.op('a');
    deep.op('.');
    EXPECT_NE(pickle_error(deep.bytes()).find("is a list, not a state dict"), std::string::npos);
    PickleWriter deep_key;  // a key nested 1000 tuples deep
    deep_key.proto().op('}');
    deep_key.op(')');
    for (int i = 0; i < 1000; ++i) deep_key.op('\x85');
    deep_key.op('N').op('s').op('.');
    EXPECT_NE(pickle_error(deep_key.bytes()).find("nested too deeply"), std::string::npos);
}

TEST(PickleSecurity, ValuesOfTheStateDict) {
    PickleWriter list_value;
    list_value.proto().op('}').str("layers").op(']').op('s').op('.');
    EXPECT_NE(pickle_error(list_value.bytes()).find("entry 'layers' is a list, not a tensor"), std::string::npos);
    PickleWriter int_key;
    int_key.proto().op('}').integer(3).op('N').op('s').op('.');
    EXPECT_NE(pickle_error(int_key.bytes()).find("state dict key 3 is a int, not a str"), std::string::npos);
    PickleWriter top_tensor;  // torch.save(tensor)
    top_tensor.proto().tensor("FloatStorage", "0", 1, 0, {}, {}).op('.');
    EXPECT_NE(pickle_error(top_tensor.bytes(), {{"0", std::vector<std::byte>(4)}}).find(
                  "the checkpoint is a torch.Tensor, not a state dict"),
              std::string::npos);
    // text-protocol opcodes (protocol 0): INT, LONG, FLOAT, STRING, UNICODE, PUT, GET, DICT
    std::string p0 = "(dp0\nS'a\\x41\\n'\np1\nI01\nsVb\\u00e9\np2\nL12345678901234567890L\nsS\"c\"\n"
                     "F1.5\nsg1\nI-7\ns.";
    EXPECT_EQ(pickle_error(p0), "<no error>");
}

}  // namespace
