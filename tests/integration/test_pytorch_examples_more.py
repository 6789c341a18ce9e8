"""More of PyTorch's example programs (pytorch/examples) run unedited on Ember under
``python -m ember.as_torch``: reinforcement_learning's REINFORCE and actor-critic on CartPole,
and fast_neural_style's stylizing (``eval``). The helpers are test_pytorch_examples.py's
(``run`` copies a program's folder into the tmp dir and runs it there); the programs are read
from a local copy of pytorch/examples at a pinned commit (upstream/pytorch_examples.md says
how, and why fast_neural_style's ``train`` is not here).

The reinforcement-learning programs ``import gymnasium``, which is not a dependency: their
runs have a stand-in first on ``PYTHONPATH`` (``upstream/stand_ins/gymnasium``, this
project's code), gymnasium's CartPole-v1 with its dynamics, which ends the program after a
given number of episodes (the programs loop until CartPole is solved).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import numpy as np
import pytest
from integration.test_pytorch_examples import ONNX, copy_program, masked, needs_pytorch, run

import ember

# ---------------------------------------------------------------- the gymnasium stand-in
STAND_INS = Path(__file__).parent / "upstream" / "stand_ins"


@pytest.fixture(scope="module")
def gym():
    """The stand-in imported in this process under a name of its own (not ``gymnasium``)."""
    spec = importlib.util.spec_from_file_location(
        "gymnasium_stand_in", STAND_INS / "gymnasium" / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def with_gymnasium(episodes: int | None = None) -> dict[str, str]:
    """The environment of a program run that imports the stand-in as ``gymnasium`` (and ends
    after ``episodes`` episodes)."""
    env = {"PYTHONPATH": os.pathsep.join([str(STAND_INS), os.environ.get("PYTHONPATH", "")])}
    if episodes is not None:
        env["GYMNASIUM_STAND_IN_EPISODES"] = str(episodes)
    return env


def run_episode(env, policy, observation: np.ndarray) -> tuple[int, np.ndarray, bool, bool]:
    """One episode from ``observation`` (the reset's) with actions ``policy(observation)``:
    its length, its last observation, terminated, truncated."""
    steps = 0
    while True:
        steps += 1
        observation, reward, terminated, truncated, info = env.step(policy(observation))
        assert reward == 1.0 and info == {}
        if terminated or truncated:
            return steps, observation, terminated, truncated


def test_gymnasium_stand_in_is_gymnasiums_cartpole(gym):
    # the numbers are real gymnasium 1.3.0's, bit for bit
    env = gym.make("CartPole-v1", render_mode=None)
    assert (env.spec.reward_threshold, env.spec.max_episode_steps) == (475.0, 500)
    observation, info = env.reset(seed=543)
    assert observation.dtype == np.float32 and info == {}
    assert observation.tolist() == [-0.003520013066008687, 0.016111763194203377,
                                    -0.005387566518038511, -0.005440521519631147]
    for action in [1, 0, 1, 1, 0]:
        observation, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated, info) == (1.0, False, False, {})
    assert observation.tolist() == [0.013721597380936146, 0.21196967363357544,
                                    -0.02980346418917179, -0.31446918845176697]
    # pushed right all the time, the pole falls past 12 degrees at the 9th step
    steps, observation, terminated, truncated = run_episode(
        env, lambda obs: 1, env.reset(seed=1)[0])
    assert (steps, terminated, truncated) == (9, True, False)
    assert observation.tolist() == [0.15024752914905548, 1.8084592819213867,
                                    -0.25012344121932983, -2.820631980895996]
    # balanced, it stays up: truncated at the 500th step (unseeded reset: the same Generator)
    steps, observation, terminated, truncated = run_episode(
        env, lambda obs: int(obs[2] + 0.5 * obs[3] > 0), env.reset()[0])
    assert (steps, terminated, truncated) == (500, False, True)
    assert observation.tolist() == [-0.05446218326687813, -0.007960392162203789,
                                    -0.00026140344562008977, -0.0026107903104275465]
    with pytest.raises(AssertionError, match="invalid"):
        env.step(2)
    with pytest.raises(ValueError, match="'MountainCar-v0' is not in the gymnasium stand-in"):
        gym.make("MountainCar-v0")


def test_gymnasium_stand_in_ends_the_program_after_its_episodes(gym, monkeypatch, capsys):
    monkeypatch.setenv("GYMNASIUM_STAND_IN_EPISODES", "2")
    env = gym.make("CartPole-v1")
    env.reset(seed=0)  # not an episode yet
    for _ in range(2):
        run_episode(env, lambda obs: 0, env.reset()[0])
    with pytest.raises(SystemExit) as stop:
        env.reset()
    assert isinstance(stop.value, gym.EpisodeLimit) and stop.value.code == 0
    assert capsys.readouterr().out == "gymnasium stand-in: stopped after 2 episodes\n"


# ---------------------------------------------------------------- reinforcement_learning
EPISODES = 60


def cartpole_log(out: str) -> list[float]:
    """The reward of each episode the programs logged (``--log-interval 1``), after checking
    the lines: episodes 1 to EPISODES, rewards and running rewards with 2 decimals, the
    running reward updated from 10 as the programs do, then the stand-in's last line."""
    lines = out.split("\n")
    assert lines[-2:] == [f"gymnasium stand-in: stopped after {EPISODES} episodes", ""], out
    logged = [re.fullmatch(r"Episode (\d+)\tLast reward: (\d+\.\d\d)\tAverage reward: "
                           r"(\d+\.\d\d)", line) for line in lines[:-2]]
    assert all(logged), out
    assert [int(m[1]) for m in logged] == list(range(1, EPISODES + 1))
    rewards = [float(m[2]) for m in logged]
    # a reward of 1 for each step: the episode's length, at most the time limit of 500
    assert all(r == int(r) and 1 <= r <= 500 for r in rewards), rewards
    running = 10.0
    for reward, average in zip(rewards, (float(m[3]) for m in logged)):
        running = 0.05 * reward + (1 - 0.05) * running
        assert abs(running - average) <= 0.005 + 1e-9, (running, average)
    return rewards


#: the programs' --seed: one on which both learn within EPISODES (the default, 543, on PyTorch
#: and so on Ember: reinforce 26 -> 73 steps, actor_critic settles at once on pushing one way)
SEED = "1"


def run_cartpole(workdir: Path, program: str, **kwargs) -> str:
    return run(workdir, "reinforcement_learning", "--log-interval", "1", "--seed", SEED,
               script=f"{program}.py", env=with_gymnasium(EPISODES), **kwargs)


@pytest.fixture(scope="module", params=["reinforce", "actor_critic"])
def cartpole(request, tmp_path_factory) -> tuple[str, str]:
    """A program and what it printed on Ember in EPISODES episodes of its default seed."""
    return request.param, run_cartpole(tmp_path_factory.mktemp("ember"), request.param)


def test_cartpole_policy_learns(cartpole):
    _, out = cartpole
    rewards = cartpole_log(out)
    # a random policy balances the pole for about 22 steps; after 60 episodes of learning,
    # several times longer (seed 1: reinforce 36 -> 127 steps on average over 10 episodes,
    # actor_critic 31 -> 93, on Ember and PyTorch alike). Not every seed learns this fast.
    first, last = np.mean(rewards[:10]), np.mean(rewards[-10:])
    assert last > 2 * first and last > 75, rewards


def test_cartpole_prints_what_pytorch_prints(tmp_path, cartpole):
    needs_pytorch()
    program, ours = cartpole
    theirs = run_cartpole(tmp_path, program, on_pytorch=True)
    # the same lines. Ember draws PyTorch's numbers from the same seed (the network's initial
    # weights, the dropout masks, the sampled actions), so the episodes coincide until the two
    # libraries' float rounding flips a sampled action (seed 1: actor_critic's 52nd episode;
    # seed 543: all 60 of both programs). The numbers are masked: that point moves with the
    # BLAS kernel.
    assert masked(ours) == masked(theirs)
    cartpole_log(theirs)


#: three training steps (``finish_episode``) of each program's model on the same episodes:
#: PyTorch writes the initial weights and the results (``python step.py torch``), Ember
#: compares. The programs are imported (they parse their flags and make the environment);
#: the episodes' states and actions are fixed, and dropout is off (``eval()``), so that both
#: libraries compute with the same numbers.
RL_STEP = """
import sys

mode = sys.argv[1:]
del sys.argv[1:]  # the programs parse the command line when imported
import numpy as np
import torch
from torch.distributions import Categorical
import actor_critic
import reinforce

for program in (reinforce, actor_critic):
    model = program.policy if program is reinforce else program.model
    name = program.__name__
    if mode == ["torch"]:
        torch.save(model.state_dict(), name + ".pt")
    model.load_state_dict(torch.load(name + ".pt"))
    model.eval()
    rng = np.random.default_rng(0)
    results = {}
    for episode, steps in enumerate([12, 30, 7]):
        for state, action in zip(rng.normal(scale=0.2, size=(steps, 4)).astype(np.float32),
                                 rng.integers(2, size=steps)):
            if program is reinforce:  # as its select_action, with this action
                probs = model(torch.from_numpy(state).float().unsqueeze(0))
                model.saved_log_probs.append(Categorical(probs).log_prob(torch.tensor([action])))
            else:
                probs, value = model(torch.from_numpy(state).float())
                model.saved_actions.append(program.SavedAction(
                    Categorical(probs).log_prob(torch.tensor(action)), value))
            model.rewards.append(1.0)
        program.finish_episode()
        for key, value in model.named_parameters():
            results[f"{episode} {key}"] = value.detach().clone()
            results[f"{episode} {key}.grad"] = value.grad.clone()
    if mode == ["torch"]:
        torch.save(results, name + ".results.pt")
    else:
        expected = torch.load(name + ".results.pt")
        assert list(expected) == list(results)
        for key, value in results.items():
            torch.testing.assert_close(value, expected[key], rtol=1e-4, atol=1e-6)
        print(name, "same")
"""


def test_cartpole_training_steps_match_pytorch(tmp_path):
    needs_pytorch()
    folder = tmp_path / "reinforcement_learning"
    copy_program("reinforcement_learning", folder)
    (folder / "step.py").write_text(RL_STEP)
    run(tmp_path, folder.name, "torch", script="step.py", on_pytorch=True, env=with_gymnasium())
    assert run(tmp_path, folder.name, script="step.py", env=with_gymnasium()) == (
        "reinforce same\nactor_critic same\n")


@pytest.mark.slow
def test_actor_critic_learns_cartpole(tmp_path):
    """The program learns: its running reward (an average over episodes, ~20 for a random
    policy; CartPole-v1's episodes end at 500) climbs above 100 within 300 episodes, and
    where it gets above the threshold, 475, the program ends itself with upstream's message.

    When it gets there depends on every rounding of the run, so on the BLAS kernel and its
    thread count: with the older OpenBLAS kernel that OPENBLAS_CORETYPE forced on some
    machines it solved after ~170 episodes; with the Haswell kernel on an AMD EPYC two runs
    reached a running reward of 351 by episode 90 and only 147 by episode 290, and neither
    solved within 400 (actor-critic on CartPole is not monotone). A regression stays near
    20."""
    out = run(tmp_path, "reinforcement_learning", script="actor_critic.py",
              env=with_gymnasium(300))
    running = [float(r) for r in re.findall(r"\tAverage reward: (\d+\.\d+)\n", out)]
    episodes = [int(e) for e in re.findall(r"Episode (\d+)\t", out)]
    assert episodes == list(range(10, episodes[-1] + 1, 10)), out  # every 10th, by default
    assert running and max(running) > 100, out
    m = re.search(r"\nSolved! Running reward is now (\d+\.\d+) and the last episode runs to "
                  r"(\d+) time steps!\n$", out)
    if m is None:
        assert out.endswith("gymnasium stand-in: stopped after 300 episodes\n"), out
    else:
        assert float(m[1]) > 475 and 1 <= int(m[2]) <= 500


# ---------------------------------------------------------------- fast_neural_style
#: a TransformerNet checkpoint as training saves it (a state dict), and one with the running
#: statistics of InstanceNorm that checkpoints of PyTorch < 0.4 held (``eval`` deletes them)
MAKE_MODEL = r"""
import re
import torch
from transformer_net import TransformerNet

torch.manual_seed(0)
model = TransformerNet()
with torch.no_grad():  # untrained, it paints about 0: spread its output over the byte range
    model.deconv3.conv2d.weight.mul_(60)
    model.deconv3.conv2d.bias.add_(128)
state = model.state_dict()
torch.save(state, "model.pth")
old = dict(state)
for name, value in state.items():
    norm = re.fullmatch(r"(.*in\d+)\.weight", name)
    if norm:
        old[norm[1] + ".running_mean"] = torch.zeros_like(value)
        old[norm[1] + ".running_var"] = torch.ones_like(value)
torch.save(old, "old_model.pth")
"""

#: what ``neural_style.py eval`` computes, with the program's modules, where torchvision
#: (its ``transforms``) is not installed: PyTorch's output, before and as saved
STYLIZE = r"""
import numpy as np
import torch
import utils
from transformer_net import TransformerNet

content = utils.load_image("content.png")
# transforms.ToTensor(), then the program's x.mul(255)
content = torch.from_numpy(np.array(content)).permute(2, 0, 1).float().div(255).mul(255)
with torch.no_grad():
    model = TransformerNet()
    model.load_state_dict(torch.load("model.pth"))
    model.eval()
    output = model(content.unsqueeze(0)).cpu()
torch.save(output[0].clone(), "theirs.pt")
utils.save_image("theirs.png", output[0])
"""

#: the model exported to ONNX by Ember, at the program's own opset (11)
EXPORT_ONNX = r"""
import torch
import utils
from transformer_net import TransformerNet
from torchvision import transforms

model = TransformerNet()
model.load_state_dict(torch.load("model.pth"))
model.eval()
content = transforms.ToTensor()(utils.load_image("content.png")).mul(255).unsqueeze(0)
torch.onnx.export(model, content, "model.onnx", opset_version=11)
"""


def write_content_image(path: Path) -> None:
    """A small content image, 64 x 48: colour ramps, and a square of noise."""
    from PIL import Image

    y, x = np.mgrid[0:48, 0:64]
    image = np.stack([x * 4, y * 5, (x + y) * 2], axis=-1).astype(np.uint8)
    image[10:30, 20:40] = np.random.default_rng(0).integers(0, 256, (20, 20, 3))
    Image.fromarray(image).save(path)


def read_image(path: Path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path))


def stylize(folder: Path, model: str, output: str) -> str:
    """``neural_style.py eval`` on Ember (without ``--accel``: on the CPU); its stdout."""
    return run(folder.parent, folder.name, "eval", "--content-image", "content.png",
               "--model", model, "--output-image", output, script="neural_style/neural_style.py")


def copy_fast_neural_style(workdir: Path) -> Path:
    """The program's folder in ``workdir`` with the content image and the test's drivers."""
    folder = workdir / "fast_neural_style"
    copy_program("fast_neural_style", folder)
    write_content_image(folder / "content.png")
    for name, source in (("make_model", MAKE_MODEL), ("stylize", STYLIZE),
                         ("export_onnx", EXPORT_ONNX)):
        (folder / "neural_style" / f"{name}.py").write_text(source)
    return folder


@pytest.fixture(scope="module")
def stylized(tmp_path_factory) -> tuple[Path, str]:
    """The program's folder after ``eval`` of the checkpoint into ``ours.png`` on Ember, and
    what it printed."""
    pytest.importorskip("ember.vision")
    folder = copy_fast_neural_style(tmp_path_factory.mktemp("ember"))
    run(folder.parent, folder.name, script="neural_style/make_model.py")
    return folder, stylize(folder, "model.pth", "ours.png")


def test_fast_neural_style_eval(stylized):
    folder, out = stylized
    # the program warns when it could use an accelerator (Ember on a GPU machine)
    warning = ("WARNING: accelerator is available, run with --accel to enable it\n"
               if ember.accelerator.is_available() else "")
    assert out == warning + "Using device: cpu\n"
    image = read_image(folder / "ours.png")
    # two stride-2 convolutions, then two 2x upsamplings: the content image's size
    assert image.shape == (48, 64, 3) and image.dtype == np.uint8
    assert image.std() > 15 and len(np.unique(image)) > 100  # (19.9 from the seeded model)
    # the checkpoint of an older PyTorch: its InstanceNorm running statistics are deleted
    assert len(ember.load(folder / "old_model.pth")) == len(ember.load(folder / "model.pth")) + 30
    stylize(folder, "old_model.pth", "old.png")
    np.testing.assert_array_equal(read_image(folder / "old.png"), image)


def test_fast_neural_style_eval_as_on_pytorch(stylized):
    needs_pytorch()
    folder, _ = stylized
    run(folder.parent, folder.name, script="neural_style/stylize.py", on_pytorch=True)
    ours = read_image(folder / "ours.png").astype(np.float64)
    theirs = ember.load(folder / "theirs.pt").numpy().transpose(1, 2, 0).clip(0, 255)
    # both save the float image truncated to bytes: ours is at most one below theirs
    assert ((ours - theirs > -1.01) & (ours - theirs < 0.01)).all()
    assert np.mean(read_image(folder / "theirs.png") == ours) > 0.99


def test_fast_neural_style_eval_onnx(stylized):
    if not ONNX or importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("exporting needs onnx, the program runs the model with onnxruntime")
    folder, _ = stylized
    run(folder.parent, folder.name, script="neural_style/export_onnx.py")
    # a model file ending in .onnx: the program runs it with onnxruntime
    stylize(folder, "model.onnx", "onnx.png")
    ours, onnx = (read_image(folder / name).astype(int) for name in ("ours.png", "onnx.png"))
    assert np.abs(onnx - ours).max() <= 1 and np.mean(onnx == ours) > 0.99

