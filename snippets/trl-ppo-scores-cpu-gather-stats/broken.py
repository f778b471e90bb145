"""trl 0.6.0-0.7.1 `PPOTrainer.step`, reduced: the reward scores are moved to the process's GPU
by `_step_safety_checker`, then turned back into one tensor with `scores = torch.tensor(scores)`,
which lands on the CPU. With several GPUs, `gather_stats` all-reduces `ppo/mean_scores` through
the NCCL process group and fails.

Upstream: https://github.com/huggingface/trl/issues/680 (the cause), #715, #774, #949 (the
reports), fixed by https://github.com/huggingface/trl/pull/681 ("fix device issue", trl 0.7.2).
Run with two processes, as `accelerate launch --num_processes 2` would.
"""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class PPOTrainer:
    """trl/trainer/ppo_trainer.py (0.7.1), the path from `step` to `gather_stats`."""

    def __init__(self, rank, world_size):
        self.current_device = torch.device("cuda", rank)  # self.accelerator.device
        self.num_processes = world_size
        self.is_distributed = world_size > 1

    def _step_safety_checker(self, batch_size, queries, responses, scores):
        queries = [tensor.to(self.current_device) for tensor in queries]
        responses = [tensor.to(self.current_device) for tensor in responses]
        scores = [tensor.to(self.current_device) for tensor in scores]
        return queries, responses, scores

    def step(self, queries, responses, scores):
        bs = len(queries)
        queries, responses, scores = self._step_safety_checker(bs, queries, responses, scores)
        scores = torch.tensor(scores)
        # ... forward passes, advantages and the PPO minibatch updates ...
        logprobs = torch.stack([r.float().log_softmax(-1) for r in responses])
        stats = self.record_step_stats(scores=scores, logprobs=logprobs)
        # Gather/Reduce stats from all processes
        if self.is_distributed:
            stats = self.gather_stats(stats)
        return stats

    def record_step_stats(self, **data):
        mean_scores = data["scores"].mean()  # scores is size `batch_size`
        std_scores = data["scores"].std()
        return {
            "objective/logprobs": data["logprobs"].mean(),
            "ppo/mean_scores": mean_scores,
            "ppo/std_scores": std_scores,
        }

    def gather_stats(self, stats):
        # Wait for all processes to finish
        dist.barrier()
        for k, v in stats.items():
            if isinstance(v, torch.Tensor):
                dist.all_reduce(v, dist.ReduceOp.SUM)
                v /= self.num_processes
            stats[k] = v
        return stats


def run(rank, world_size, out_dir):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.manual_seed(rank)
    ppo_trainer = PPOTrainer(rank, world_size)

    query_tensors = [torch.randint(100, (6,)) for _ in range(4)]
    response_tensors = [torch.randint(100, (5,)) for _ in range(4)]
    rewards = [torch.tensor(float(s)) for s in torch.rand(4)]  # the sentiment pipeline's scores, on the CPU
    stats = ppo_trainer.step(query_tensors, response_tensors, rewards)
    torch.save({k: v.cpu() for k, v in stats.items()}, os.path.join(out_dir, f"stats_rank{rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    out_dir = tempfile.mkdtemp()
    mp.spawn(run, args=(2, out_dir), nprocs=2)
    stats = [torch.load(os.path.join(out_dir, f"stats_rank{r}.pt")) for r in range(2)]
    print("ppo/mean_scores per rank:", [round(s["ppo/mean_scores"].item(), 4) for s in stats])  # the ranks agree
