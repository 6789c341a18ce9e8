// Optimizer checkpoints between C++ and Python, both ways, with PyTorch and with Python
// Ember (optim_interop.py): ember::save(optimizer, "opt.pt") is taken by Python's
// optimizer.load_state_dict(load(path, weights_only=True)), and torch.save /
// ember.save(optimizer.state_dict(), path) by ember::load(optimizer, path); either way the
// next step is the one the saving side takes. Skipped without a Python with torch and ember
// (as PythonReadsWhatCppWrites).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/checkpoint.h"
#include "ember/factories.h"
#include "ember/generator.h"
#include "serialize/optim_test_cases.h"
#include "serialize/serialize_test_util.h"

namespace {

using namespace ember_serialize_test;  // NOLINT
using namespace ember_optim_cases;     // NOLINT

std::vector<Tensor> initial_params() {
    return {ember::randn({2, 3}).requires_grad_(), ember::randn({2}).requires_grad_()};
}

std::vector<Tensor> random_grads() { return {ember::randn({2, 3}), ember::randn({2})}; }

// Runs optim_interop.py FRAMEWORK MODE DIR KIND... (every kind) and returns its output.
std::string run_script(const std::string& python, const std::string& framework, const std::string& mode,
                       const std::string& dir) {
    std::string out, command = python + " '" + source_dir() + "/optim_interop.py' " + framework + " " + mode + " '" +
                                   dir + "'";
    for (const std::string& kind : kinds()) command += " " + kind;
    const int rc = run_command(command + " 2>&1", &out);
    EXPECT_EQ(rc, 0) << out;
    return out;
}

std::string make_folder(const TempDir& dir, const std::string& kind) {
    const std::string folder = dir.file(kind);
    EXPECT_EQ(::mkdir(folder.c_str(), 0700), 0);
    return folder + "/";
}

// C++ saves after two steps; Python loads into an optimizer made with other options and
// steps once: the parameters C++ gets by stepping once more.
TEST(OptimizerInterop, PythonLoadsWhatCppSaves) {
    const std::string python = test_python();
    if (python.empty()) GTEST_SKIP() << "no Python with ember and torch (see PythonReadsWhatCppWrites)";
    for (const std::string framework : {"torch", "ember"}) {
        TempDir dir;
        struct Case {
            std::vector<Tensor> params, next;
            std::unique_ptr<optim::Optimizer> opt;
            Tensor saved_p0;
        };
        std::vector<Case> cases;
        ember::manual_seed(1);
        for (const std::string& kind : kinds()) {
            const std::string folder = make_folder(dir, kind);
            Case c;
            c.params = initial_params();
            c.opt = make_optimizer(kind, c.params, true);
            step_with(*c.opt, c.params, random_grads());
            step_with(*c.opt, c.params, random_grads());
            ember::save(*c.opt, folder + "cpp_opt.pt");
            c.next = random_grads();
            c.saved_p0 = c.params[0].detach().clone();
            ember::StateDict data;
            data.insert("p0", c.saved_p0);
            data.insert("p1", c.params[1].detach().clone());
            data.insert("g0", c.next[0]);
            data.insert("g1", c.next[1]);
            ember::save(data, folder + "data.pt");
            cases.push_back(std::move(c));
        }
        const std::string out = run_script(python, framework, "load", dir.path());
        for (std::size_t k = 0; k < cases.size(); ++k) {
            SCOPED_TRACE(framework + " " + kinds()[k]);
            Case& c = cases[k];
            step_with(*c.opt, c.params, c.next);
            const ember::StateDict after = ember::load_state_dict(dir.file(kinds()[k] + "/py_after.pt"));
            ASSERT_EQ(after.size(), 2u) << out;
            EXPECT_LE(max_rel_diff(c.params[0], after[0].value()), 1e-6) << out;
            EXPECT_LE(max_rel_diff(c.params[1], after[1].value()), 1e-6) << out;
            EXPECT_GT(max_rel_diff(c.saved_p0, after[0].value()), 1e-4) << out;  // it stepped
        }
    }
}

// Python steps twice and saves its optimizer; C++ loads it into an optimizer made with
// other options and steps once: the parameters Python gets by stepping once more.
TEST(OptimizerInterop, CppLoadsWhatPythonSaves) {
    const std::string python = test_python();
    if (python.empty()) GTEST_SKIP() << "no Python with ember and torch (see PythonReadsWhatCppWrites)";
    for (const std::string framework : {"torch", "ember"}) {
        TempDir dir;
        std::vector<std::vector<Tensor>> thirds;
        ember::manual_seed(2);
        for (const std::string& kind : kinds()) {
            const std::string folder = make_folder(dir, kind);
            ember::StateDict data;
            std::vector<Tensor> init = initial_params();
            data.insert("p0", init[0].detach());
            data.insert("p1", init[1].detach());
            for (int k = 1; k <= 3; ++k) {
                const std::vector<Tensor> g = random_grads();
                data.insert("g0_" + std::to_string(k), g[0]);
                data.insert("g1_" + std::to_string(k), g[1]);
                if (k == 3) thirds.push_back(g);
            }
            ember::save(data, folder + "data.pt");
        }
        const std::string out = run_script(python, framework, "save", dir.path());
        for (std::size_t k = 0; k < kinds().size(); ++k) {
            SCOPED_TRACE(framework + " " + kinds()[k]);
            const std::string folder = dir.file(kinds()[k]) + "/";
            const ember::StateDict saved = ember::load_state_dict(folder + "py_params.pt");
            ASSERT_EQ(saved.size(), 2u) << out;
            std::vector<Tensor> params = {saved[0].value().clone().requires_grad_(),
                                          saved[1].value().clone().requires_grad_()};
            auto opt = make_optimizer(kinds()[k], params, false);
            ember::load(*opt, folder + "py_opt.pt");
            step_with(*opt, params, thirds[k]);
            const ember::StateDict next = ember::load_state_dict(folder + "py_next.pt");
            EXPECT_LE(max_rel_diff(params[0], next[0].value()), 1e-6) << out;
            EXPECT_LE(max_rel_diff(params[1], next[1].value()), 1e-6) << out;

            // and the file is what C++ writes for the same optimizer, key for key
            ember::save(*opt, folder + "cpp_opt.pt");
            const es::Value py = es::read_torch_object(folder + "py_opt.pt");
            const es::Value cpp = es::read_torch_object(folder + "cpp_opt.pt");
            for (std::size_t g = 0; g < 2; ++g) {
                const es::Value& py_group = py.find("param_groups")->items.at(g);
                const es::Value& cpp_group = cpp.find("param_groups")->items.at(g);
                ASSERT_EQ(py_group.dict_size(), cpp_group.dict_size());
                for (std::size_t i = 0; i < py_group.dict_size(); ++i) {
                    EXPECT_EQ(py_group.key(i).text, cpp_group.key(i).text);
                    if (py_group.key(i).text != "params") {  // the same values of the same types
                        expect_same_value(cpp_group.value(i), py_group.value(i), py_group.key(i).text);
                    }
                }
            }
            for (int64_t p = 0; p < 2; ++p) {
                const es::Value& py_state = *py.find("state")->find(p);
                const es::Value& cpp_state = *cpp.find("state")->find(p);
                ASSERT_EQ(py_state.dict_size(), cpp_state.dict_size());
                for (std::size_t i = 0; i < py_state.dict_size(); ++i) {
                    EXPECT_EQ(py_state.key(i).text, cpp_state.key(i).text);
                    EXPECT_EQ(py_state.value(i).tensor.dtype, cpp_state.value(i).tensor.dtype);
                    EXPECT_EQ(py_state.value(i).tensor.shape, cpp_state.value(i).tensor.shape);
                }
            }
        }
    }
}

}  // namespace
