"""A stand-in `gym` next to the script: main.py imports gym (the old OpenAI Gym, not installed here; its
successor gymnasium is) and uses the pre-0.26 API: env.seed(s), obs = env.reset(),
obs, reward, done, info = env.step(a), env._max_episode_steps. The stand-in wraps gymnasium.make with
that API; the environment (Pendulum-v1, pure NumPy) and everything on the device are unchanged."""

STANDIN = '''"""Stand-in for the old gym API over gymnasium (written by the benchmark)."""
import gymnasium


class _OldAPI:
    def __init__(self, env):
        self._env = env
        self._seed = None
        self._max_episode_steps = env.spec.max_episode_steps

    def seed(self, seed=None):
        self._seed = seed
        return [seed]

    def reset(self):
        obs, _ = self._env.reset(seed=self._seed)
        self._seed = None
        return obs

    def step(self, action):
        obs, reward, terminated, truncated, info = self._env.step(action)
        return obs, reward, terminated or truncated, info

    def __getattr__(self, name):
        return getattr(self._env, name)


def make(name, **kwargs):
    return _OldAPI(gymnasium.make(name, **kwargs))
'''

with open("gym.py", "w") as f:
    f.write(STANDIN)
