// Optimizer::state_dict / load_state_dict and ember::save / ember::load of optimizers to
// PyTorch checkpoints: Python's optimizer.state_dict() layout exactly (as PyTorch 2.13 prints
// it), a restored optimizer continuing exactly, and errors that leave the optimizer as it was.
// (C++ <-> Python: tests/serialize/test_optimizer_interop.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "ember/checkpoint.h"
#include "ember/factories.h"
#include "ember/generator.h"
#include "ember/ops.h"
#include "serialize/optim_test_cases.h"
#include "serialize/serialize_test_util.h"

namespace {

using namespace ember_optim_cases;      // NOLINT
using namespace ember_serialize_test;   // NOLINT: TempDir
using es::Value;

std::vector<std::string> keys_of(const Value& dict) {
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < dict.dict_size(); ++i) keys.push_back(dict.key(i).text);
    return keys;
}

std::vector<Tensor> make_params() { return {ember::randn({2, 3}).requires_grad_(), ember::randn({2}).requires_grad_()}; }
std::vector<Tensor> make_grads() { return {ember::randn({2, 3}), ember::randn({2})}; }

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const ember::ValueError& e) {
        return std::string("ValueError: ") + e.what();
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "<no error>";
}

// torch.optim.Adam(params, lr=1e-3).state_dict() after one step, as PyTorch 2.13 has it.
TEST(OptimizerStateDict, AdamLayoutIsPyTorchs) {
    ember::manual_seed(0);
    std::vector<Tensor> params = make_params();
    optim::Adam opt(params, optim::AdamOptions(1e-3));
    step_with(opt, params, make_grads());
    const Value sd = opt.state_dict();
    EXPECT_EQ(keys_of(sd), (std::vector<std::string>{"state", "param_groups"}));
    const Value& state = *sd.find("state");
    ASSERT_EQ(state.dict_size(), 2u);
    for (int64_t i = 0; i < 2; ++i) {
        EXPECT_EQ(state.key(static_cast<std::size_t>(i)).kind, Value::Kind::Int);
        EXPECT_EQ(state.key(static_cast<std::size_t>(i)).integer, i);
        const Value& s = state.value(static_cast<std::size_t>(i));
        EXPECT_EQ(keys_of(s), (std::vector<std::string>{"step", "exp_avg", "exp_avg_sq"}));
        EXPECT_EQ(s.find("step")->tensor.dtype, ember::kFloat32);
        EXPECT_TRUE(s.find("step")->tensor.shape.empty());
        EXPECT_EQ(*reinterpret_cast<const float*>(s.find("step")->tensor.data()), 1.0f);
        EXPECT_EQ(s.find("exp_avg")->tensor.shape, params[static_cast<std::size_t>(i)].sizes().vec());
    }
    const Value& groups = *sd.find("param_groups");
    ASSERT_EQ(groups.kind, Value::Kind::List);
    ASSERT_EQ(groups.items.size(), 1u);
    const Value& g = groups.items[0];
    EXPECT_EQ(keys_of(g), (std::vector<std::string>{"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize",
                                                    "foreach", "capturable", "differentiable", "fused",
                                                    "decoupled_weight_decay", "params"}));
    EXPECT_EQ(g.find("lr")->kind, Value::Kind::Float);
    EXPECT_EQ(g.find("lr")->real, 1e-3);
    EXPECT_EQ(g.find("betas")->kind, Value::Kind::Tuple);
    EXPECT_EQ(g.find("betas")->items.at(1).real, 0.999);
    EXPECT_EQ(g.find("eps")->real, 1e-8);
    EXPECT_EQ(g.find("weight_decay")->kind, Value::Kind::Int);  // PyTorch's default is the int 0
    EXPECT_EQ(g.find("amsgrad")->kind, Value::Kind::Bool);
    EXPECT_TRUE(g.find("foreach")->is_none());
    EXPECT_TRUE(g.find("fused")->is_none());
    EXPECT_FALSE(g.find("decoupled_weight_decay")->boolean);
    ASSERT_EQ(g.find("params")->kind, Value::Kind::List);
    EXPECT_EQ(g.find("params")->items.at(1).integer, 1);

    optim::AdamW adamw(params, optim::AdamWOptions(1e-3).amsgrad(true));
    step_with(adamw, params, make_grads());
    const Value w = adamw.state_dict();
    EXPECT_EQ(keys_of(w.find("state")->value(0)),
              (std::vector<std::string>{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}));
    const Value& wg = w.find("param_groups")->items.at(0);
    EXPECT_EQ(wg.find("weight_decay")->kind, Value::Kind::Float);
    EXPECT_EQ(wg.find("weight_decay")->real, 0.01);
    EXPECT_TRUE(wg.find("decoupled_weight_decay")->boolean);
    EXPECT_TRUE(wg.find("amsgrad")->boolean);
}

// torch.optim.SGD(...).state_dict(): no state without momentum, momentum_buffer with it.
TEST(OptimizerStateDict, SGDLayoutIsPyTorchs) {
    ember::manual_seed(0);
    std::vector<Tensor> params = make_params();
    optim::SGD plain(params, optim::SGDOptions(0.1));
    step_with(plain, params, make_grads());
    const Value sd = plain.state_dict();
    EXPECT_EQ(sd.find("state")->dict_size(), 0u);
    const Value& g = sd.find("param_groups")->items.at(0);
    EXPECT_EQ(keys_of(g), (std::vector<std::string>{"lr", "momentum", "dampening", "weight_decay", "nesterov",
                                                    "maximize", "foreach", "differentiable", "fused", "params"}));
    for (const char* key : {"momentum", "dampening", "weight_decay"}) {
        EXPECT_EQ(g.find(key)->kind, Value::Kind::Int) << key;
        EXPECT_EQ(g.find(key)->integer, 0) << key;
    }
    EXPECT_FALSE(g.find("nesterov")->boolean);

    optim::SGD momentum(params, optim::SGDOptions(0.1).momentum(0.9));
    step_with(momentum, params, make_grads());
    const Value m = momentum.state_dict();
    EXPECT_EQ(keys_of(m.find("state")->value(1)), (std::vector<std::string>{"momentum_buffer"}));
    EXPECT_EQ(m.find("param_groups")->items.at(0).find("momentum")->real, 0.9);
}

// For every optimizer: save to .pt, load into an optimizer made with other options over a
// copy of the parameters; both continue bit for bit alike, and the options came back.
TEST(OptimizerStateDict, PtRoundTripContinuesExactly) {
    for (const std::string& kind : kinds()) {
        SCOPED_TRACE(kind);
        TempDir dir;
        ember::manual_seed(3);
        std::vector<Tensor> a = make_params();
        auto opt_a = make_optimizer(kind, a, true);
        step_with(*opt_a, a, make_grads());
        step_with(*opt_a, a, make_grads());
        ember::save(*opt_a, dir.file("opt.pt"));

        std::vector<Tensor> b = {a[0].detach().clone().requires_grad_(), a[1].detach().clone().requires_grad_()};
        auto opt_b = make_optimizer(kind, b, false);
        ember::load(*opt_b, dir.file("opt.pt"));
        expect_same_value(opt_b->state_dict(), opt_a->state_dict(), kind);
        for (int k = 0; k < 3; ++k) {
            const std::vector<Tensor> g = make_grads();
            step_with(*opt_a, a, g);
            step_with(*opt_b, b, g);
        }
        for (std::size_t i = 0; i < a.size(); ++i) {
            EXPECT_TRUE(ember::equal(a[i], b[i])) << i;
        }
        // the in-memory route is the same
        std::vector<Tensor> c = {a[0].detach().clone().requires_grad_(), a[1].detach().clone().requires_grad_()};
        auto opt_c = make_optimizer(kind, c, false);
        opt_c->load_state_dict(opt_a->state_dict());
        expect_same_value(opt_c->state_dict(), opt_a->state_dict(), kind);
        // a .pt of the flat names that ember::save wrote before (and still writes to
        // .safetensors) loads too: the state and the lrs
        ember::save(*opt_a, dir.file("opt.safetensors"));
        ember::save(ember::load_state_dict(dir.file("opt.safetensors")), dir.file("flat.pt"));
        auto opt_d = make_optimizer(kind, c, true);
        ember::load(*opt_d, dir.file("flat.pt"));
        expect_same_value(opt_d->state_dict(), opt_a->state_dict(), kind);
    }
}

// The state dict of optimizer `opt` after `edit`, written to `path`.
void write_edited(const optim::Optimizer& opt, const std::string& path, const std::function<void(Value&)>& edit) {
    Value sd = opt.state_dict();
    edit(sd);
    es::write_torch_object(path, sd);
}

Value& group0(Value& sd) { return sd.items.at(3).items.at(0); }  // param_groups[0]

TEST(OptimizerStateDict, ErrorsLeaveTheOptimizerUnchanged) {
    TempDir dir;
    ember::manual_seed(4);
    std::vector<Tensor> params = make_params();
    auto adam = make_optimizer("adam", params, true);
    step_with(*adam, params, make_grads());
    auto sgd = make_optimizer("sgd", params, true);
    step_with(*sgd, params, make_grads());
    auto adamw = make_optimizer("adamw", params, true);
    step_with(*adamw, params, make_grads());
    const std::string adam_pt = dir.file("adam.pt"), sgd_pt = dir.file("sgd.pt"), adamw_pt = dir.file("adamw.pt");
    ember::save(*adam, adam_pt);
    ember::save(*sgd, sgd_pt);
    ember::save(*adamw, adamw_pt);
    const Value adam_before = adam->state_dict(), sgd_before = sgd->state_dict(), adamw_before = adamw->state_dict();
    auto unchanged = [&] {
        expect_same_value(adam->state_dict(), adam_before, "adam");
        expect_same_value(sgd->state_dict(), sgd_before, "sgd");
        expect_same_value(adamw->state_dict(), adamw_before, "adamw");
    };

    // another optimizer
    EXPECT_EQ(error_of([&] { ember::load(*adam, sgd_pt); }),
              "ValueError: " + sgd_pt + ": loaded state dict is not a state dict of Adam: its parameter group has no 'betas'");
    EXPECT_EQ(error_of([&] { ember::load(*sgd, adam_pt); }),
              "ValueError: " + adam_pt + ": loaded state dict is not a state dict of SGD: its parameter group has no "
              "'momentum'");
    EXPECT_EQ(error_of([&] { ember::load(*adamw, adam_pt); }),
              "ValueError: " + adam_pt + ": loaded state dict is not a state dict of AdamW: its parameter group has "
              "decoupled_weight_decay=False (Adam's)");
    EXPECT_EQ(error_of([&] { ember::load(*adam, adamw_pt); }),
              "ValueError: " + adamw_pt + ": loaded state dict is not a state dict of Adam: its parameter group has "
              "decoupled_weight_decay=True (AdamW's)");
    unchanged();

    // other groups
    std::vector<Tensor> three = {params[0], params[1], ember::randn({4}).requires_grad_()};
    optim::Adam one_group(three, optim::AdamOptions(0.5));
    EXPECT_EQ(error_of([&] { ember::load(one_group, adam_pt); }),
              "ValueError: " + adam_pt + ": loaded state dict has a different number of parameter groups");
    optim::Adam bigger(std::vector<optim::OptimizerParamGroup>{{{params[0], three[2]}}, {{params[1]}}},
                       optim::AdamOptions(0.5));
    EXPECT_EQ(error_of([&] { ember::load(bigger, adam_pt); }),
              "ValueError: " + adam_pt + ": loaded state dict contains a parameter group that doesn't match the "
              "size of optimizer's group");
    EXPECT_TRUE(bigger.state().empty());
    EXPECT_EQ(bigger.param_groups()[0].options().get_lr(), 0.5);

    // options and states C++ cannot take
    const std::string edited = dir.file("edited.pt");
    write_edited(*adam, edited, [](Value& sd) { group0(sd).items.at(11) = Value::from_bool(true); });  // maximize
    EXPECT_EQ(error_of([&] { ember::load(*adam, edited); }),
              "ValueError: " + edited + ": loaded state dict has a parameter group with maximize=True, which "
              "ember's C++ Adam does not support");
    write_edited(*adam, edited, [](Value& sd) { group0(sd).items.at(3) = Value::from_str("0.9"); });  // betas
    EXPECT_EQ(error_of([&] { ember::load(*adam, edited); }),
              "ValueError: " + edited + ": loaded state dict has a parameter group whose 'betas' is of type str: "
              "Adam expects a tuple of two numbers");
    write_edited(*adam, edited, [](Value& sd) {
        const float three_floats[3] = {1, 2, 3};
        sd.items.at(1).items.at(1).items.at(3) = Value::from_tensor(es::make_record(ember::kFloat32, {3}, three_floats));
    });
    EXPECT_EQ(error_of([&] { ember::load(*adam, edited); }).rfind("ValueError: " + edited + ": loaded state dict has "
                                                                  "the state 'exp_avg' of parameter 0 of shape [3]", 0),
              0u);
    write_edited(*adam, edited, [](Value& sd) { sd.items.at(1).items.at(1).items.resize(2); });  // only "step"
    EXPECT_EQ(error_of([&] { ember::load(*adam, edited); }),
              "ValueError: " + edited + ": loaded state dict has no state 'exp_avg' for parameter 0");
    write_edited(*adam, edited, [](Value& sd) { sd.items.at(1).items.at(1).items.at(1) = Value::from_float(NAN); });
    EXPECT_EQ(error_of([&] { ember::load(*adam, edited); }),
              "ValueError: " + edited + ": an Adam step count must be a whole number in [0, 2^53], got nan");
    write_edited(*adam, edited, [](Value& sd) { sd.items.at(1).items.at(1).set("velocity", Value::from_int(0)); });
    EXPECT_EQ(error_of([&] { ember::load(*adam, edited); }),
              "ValueError: " + edited + ": loaded state dict has a state 'velocity' for parameter 0 of type int, "
              "not a tensor");
    write_edited(*adam, edited, [](Value& sd) { sd.items.at(1).items.at(0) = Value::from_int(7); });
    EXPECT_EQ(error_of([&] { ember::load(*adam, edited); }),
              "ValueError: " + edited + ": loaded state dict has a state for parameter 7, which no parameter group "
              "holds");
    write_edited(*adam, edited, [](Value& sd) { sd = Value::list({sd}); });
    EXPECT_EQ(error_of([&] { ember::load(*adam, edited); }),
              "ValueError: " + edited + ": loaded state dict is not an optimizer state dict (a dict with a dict "
              "'state' and a list 'param_groups'), but a list");
    unchanged();

    // a damaged file
    std::ifstream in(adam_pt, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string truncated = dir.file("truncated.pt");
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    const std::string message = error_of([&] { ember::load(*adam, truncated); });
    EXPECT_EQ(message.rfind(truncated + ": ", 0), 0u) << message;
    unchanged();

    // Python's state dicts of older versions: no decoupled_weight_decay, momentum_buffer None
    write_edited(*adamw, edited, [](Value& sd) {
        auto& items = group0(sd).items;
        ASSERT_EQ(items.at(20).text, "decoupled_weight_decay");
        items.erase(items.begin() + 20, items.begin() + 22);
    });
    ember::load(*adamw, edited);
    unchanged();
    optim::SGD fresh(params, optim::SGDOptions(0.1).momentum(0.9));
    write_edited(*sgd, edited, [](Value& sd) {
        sd.items.at(1).items.at(1).items.at(1) = Value();                  // state 0: momentum_buffer None
        sd.items.at(3).items.resize(1);                                    // one group
        sd.items.at(3).items.at(0).items.back().items.push_back(Value::from_int(1));  // of both params
    });
    ember::load(fresh, edited);
    EXPECT_EQ(fresh.state().size(), 1u);  // parameter 1's buffer only
}

}  // namespace
