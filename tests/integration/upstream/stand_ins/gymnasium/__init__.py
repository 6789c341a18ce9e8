"""A stand-in for gymnasium, enough of it for pytorch/examples' reinforcement_learning programs:
``gym.make("CartPole-v1", render_mode=None)`` with gymnasium's CartPole dynamics.

gymnasium is not a dependency and the tests have no network, so the tests put this folder's
parent first on ``PYTHONPATH``. What the programs use behaves as gymnasium 1.x's does:

- ``make("CartPole-v1")`` is the environment inside its time limit of 500 steps
  (``truncated`` at the 500th), with ``env.spec.reward_threshold == 475.0``;
- ``env.reset(seed=s)`` seeds the environment's NumPy Generator (``np.random.default_rng(s)``,
  as ``gymnasium.utils.seeding.np_random`` does) and returns ``(observation, {})``; a
  ``reset()`` without a seed goes on with the same Generator; the state starts uniform in
  (-0.05, 0.05);
- ``env.step(action)`` -> ``(observation, reward, terminated, truncated, {})``: the Euler step
  of gymnasium's ``classic_control/cartpole.py`` (Barto, Sutton and Anderson's cart-pole), a
  reward of 1.0 for each step, the termination step included, float32 observations.

The programs loop until CartPole is solved, hundreds of episodes. A test bounds them without
editing them: with ``GYMNASIUM_STAND_IN_EPISODES=N`` in the environment, the ``reset()`` that
would begin episode N + 1 prints ``gymnasium stand-in: stopped after N episodes`` and raises
:class:`EpisodeLimit`, a ``SystemExit`` with status 0: the program ends there, cleanly.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

import numpy as np

__all__ = ["make", "EnvSpec", "CartPoleEnv", "EpisodeLimit"]
__version__ = "1.0.0+stand-in"

#: the variable that bounds the number of episodes (see the module's docstring)
EPISODES_VARIABLE = "GYMNASIUM_STAND_IN_EPISODES"


class EpisodeLimit(SystemExit):
    """The episode budget of ``GYMNASIUM_STAND_IN_EPISODES`` is spent: the program ends with
    exit status 0."""

    def __init__(self, episodes: int):
        super().__init__(0)
        self.episodes = episodes


class EnvSpec(NamedTuple):
    """What gymnasium registers for an environment id (the fields the programs read)."""

    id: str
    reward_threshold: float | None = None
    max_episode_steps: int | None = None


class CartPoleEnv:
    """A pole on a cart moving along a frictionless track; action 0 pushes the cart left,
    1 right, with a force of 10 N. The observation is (cart position, cart velocity, pole
    angle, pole angular velocity); an episode terminates when the pole leans more than 12
    degrees or the cart leaves [-2.4, 2.4]."""

    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masspole + masscart
    length = 0.5  # half the pole's length
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02  # seconds between state updates
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, render_mode: str | None = None):
        if render_mode is not None:
            raise NotImplementedError("the gymnasium stand-in does not render")
        self.render_mode = render_mode
        self.np_random: np.random.Generator | None = None
        self.state: tuple[float, float, float, float] | None = None
        self.steps_beyond_terminated: int | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None or self.np_random is None:
            self.np_random = np.random.default_rng(seed)
        self.state = tuple(self.np_random.uniform(low=-0.05, high=0.05, size=(4,)))
        self.steps_beyond_terminated = None
        return np.array(self.state, dtype=np.float32), {}

    def step(self, action):
        if not (isinstance(action, (int, np.integer)) and action in (0, 1)):
            raise AssertionError(f"{action!r} ({type(action)}) invalid")
        if self.state is None:
            raise AssertionError("Call reset before using step method.")
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        # Euler integration, gymnasium's default kinematics_integrator
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * xacc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        terminated = bool(abs(x) > self.x_threshold or abs(theta) > self.theta_threshold_radians)
        if not terminated:
            reward = 1.0
        elif self.steps_beyond_terminated is None:  # the pole just fell
            self.steps_beyond_terminated = 0
            reward = 1.0
        else:  # stepping on after termination: undefined in gymnasium, no reward
            self.steps_beyond_terminated += 1
            reward = 0.0
        return np.array(self.state, dtype=np.float32), reward, terminated, False, {}


class TimeLimit:
    """gymnasium's ``TimeLimit`` wrapper, as ``make`` applies it: ``truncated`` once an
    episode has taken ``max_episode_steps`` steps. It also counts finished episodes, for
    ``GYMNASIUM_STAND_IN_EPISODES``."""

    def __init__(self, env: CartPoleEnv, spec: EnvSpec, episode_limit: int | None):
        self.env = env
        self.spec = spec
        self._elapsed_steps: int | None = None
        self._episode_limit = episode_limit
        self.episodes_finished = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self._episode_limit is not None and self.episodes_finished >= self._episode_limit:
            print(f"gymnasium stand-in: stopped after {self.episodes_finished} episodes",
                  flush=True)
            raise EpisodeLimit(self.episodes_finished)
        self._elapsed_steps = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        if self._elapsed_steps is None:  # gymnasium's OrderEnforcing wrapper
            raise RuntimeError("Cannot call env.step() before calling env.reset()")
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._elapsed_steps += 1
        if self._elapsed_steps >= self.spec.max_episode_steps:
            truncated = True
        if terminated or truncated:
            self.episodes_finished += 1
        return observation, reward, terminated, truncated, info

    @property
    def unwrapped(self) -> CartPoleEnv:
        return self.env

    def close(self) -> None:
        pass


_REGISTRY = {"CartPole-v1": EnvSpec("CartPole-v1", reward_threshold=475.0,
                                    max_episode_steps=500)}


def make(id: str, render_mode: str | None = None) -> TimeLimit:
    """The registered environment ``id`` (only ``CartPole-v1`` here) in its time limit."""
    if id not in _REGISTRY:
        raise ValueError(f"Environment {id!r} is not in the gymnasium stand-in, which has only "
                         f"{sorted(_REGISTRY)}")
    limit = os.environ.get(EPISODES_VARIABLE)
    return TimeLimit(CartPoleEnv(render_mode=render_mode), _REGISTRY[id],
                     None if limit is None else int(limit))
