"""TUD_RL's `LSTMRecDQN` after commit 9e65820, reduced: the network is told its device and
allocates the outer LSTM's input, `x_tilde`, there.

Upstream: https://github.com/MarWaltz/TUD_RL/commit/9e65820826ac86f9f05b0d4de755920cef7e2802
"""

import torch
import torch.nn.functional as F
from torch import nn


class LSTMRecDQN(nn.Module):
    """tud_rl/common/nets.py after 9e65820: an LSTM-recursive DQN for the MMGEnv. The inner
    recurrence runs over the target ships of one observation, the outer one over time."""

    def __init__(self, num_actions, num_obs_OS=7, num_obs_TS=6, device=None) -> None:
        super().__init__()
        self.device = device
        self.num_actions = num_actions
        self.num_obs_OS = num_obs_OS
        self.num_obs_TS = num_obs_TS

        # one inner recurrence per time step: t (0), t-1 (1), t-2 (2)
        for time in range(3):
            setattr(self, f"denseOS_inner{time}", nn.Linear(num_obs_OS, 64))
            setattr(self, f"LSTM_inner{time}", nn.LSTM(input_size=num_obs_TS, hidden_size=64, num_layers=1, batch_first=True))
            setattr(self, f"denseTS_inner{time}", nn.Linear(64, 64))

        # sequential observations
        self.LSTM_outer = nn.LSTM(input_size=128, hidden_size=64, num_layers=1, batch_first=True)

        # PI
        self.PI_dense1 = nn.Linear(64, 64)
        self.PI_dense2 = nn.Linear(64, num_actions)

    def forward(self, s, s_hist, a_hist, hist_len):
        # setup x_tilde which comes into outer LSTM
        batch_size, history_length, _ = s_hist.shape
        x_tilde = torch.zeros((batch_size, history_length + 1, 128)).to(self.device)

        # get s_{t-2} and s_{t-1} from s_hist since there might be incomplete histories
        s_t2 = s_hist[:, 0, :]
        s_t1 = s_hist[:, history_length - 1, :]

        # spatial recurrence: t-2, t-1, t
        x_tilde[:, 0, :] = self._inner_rec(s_t2, time=2)
        x_tilde[:, 1, :] = self._inner_rec(s_t1, time=1)
        x_tilde[:, 2, :] = self._inner_rec(s, time=0)

        # roll entries according to hist_len
        x_tilde_f = torch.roll(x_tilde, shifts=hist_len.item() - 2, dims=1)

        # push through outer LSTM
        extracted_mem, (_, _) = self.LSTM_outer(x_tilde_f)

        # select LSTM output, resulting shape is (batch_size, hidden_dim)
        hidden_mem = extracted_mem[:, hist_len.item()]

        # final dense layers
        x = F.relu(self.PI_dense1(hidden_mem))
        x = self.PI_dense2(x)
        return x

    def _inner_rec(self, s, time):
        """The target ships' states go through an LSTM; the last one's output is kept."""
        s_OS = s[:, :self.num_obs_OS]
        s_TS = s[:, self.num_obs_OS:]
        s_TS = s_TS.view(s_TS.shape[0], -1, self.num_obs_TS)

        x_OS = F.relu(getattr(self, f"denseOS_inner{time}")(s_OS))
        x_TS, (_, _) = getattr(self, f"LSTM_inner{time}")(s_TS)
        x_TS = F.relu(getattr(self, f"denseTS_inner{time}")(x_TS[:, -1]))
        return torch.cat([x_OS, x_TS], dim=1)


torch.manual_seed(0)
device = "cuda"  # the user set `device: cuda` in MMGEnvRecDQN.yaml
state_shape, history_length, num_actions = 7 + 2 * 6, 2, 3

# LSTMRecDQNAgent.__init__
DQN = LSTMRecDQN(num_actions=num_actions, device=device).to(device)

# LSTMRecDQNAgent._greedy_action: one observation and its history, moved to the device
s = torch.randn(1, state_shape).to(device)
s_hist = torch.randn(1, history_length, state_shape).to(device)
a_hist = torch.zeros(1, history_length, 1, dtype=torch.int32).to(device)
hist_len = torch.tensor(2).to(device)
with torch.no_grad():
    q = DQN(s, s_hist, a_hist, hist_len)
print(q)
