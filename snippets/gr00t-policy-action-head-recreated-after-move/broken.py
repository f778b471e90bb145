"""NVIDIA Isaac-GR00T N1.5 `Gr00tPolicy._load_model`, reduced: the policy moves the model to the
GPU, then, when the modality config asks for another action horizon, builds a new
`FlowmatchingActionHead` (on the CPU), copies the old head's weights into it with
`load_state_dict` (values, not devices) and swaps it in. The first `get_action` meets a CPU
action head fed with GPU backbone features.

Upstream: https://github.com/NVIDIA/Isaac-GR00T/issues/280, fixed by
https://github.com/NVIDIA/Isaac-GR00T/pull/294 (move the model after replacing the head).
"""

import torch
import torch.nn.functional as F
from torch import nn


class FlowmatchingActionHeadConfig:
    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)


class CategorySpecificLinear(nn.Module):
    def __init__(self, num_categories, input_dim, hidden_dim):
        super().__init__()
        self.W = nn.Parameter(0.02 * torch.randn(num_categories, input_dim, hidden_dim))
        self.b = nn.Parameter(torch.zeros(num_categories, hidden_dim))

    def forward(self, x, cat_ids):
        selected_W = self.W[cat_ids]
        selected_b = self.b[cat_ids]
        return torch.bmm(x, selected_W) + selected_b.unsqueeze(1)


class CategorySpecificMLP(nn.Module):
    def __init__(self, num_categories, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.layer1 = CategorySpecificLinear(num_categories, input_dim, hidden_dim)
        self.layer2 = CategorySpecificLinear(num_categories, hidden_dim, output_dim)

    def forward(self, x, cat_ids):
        return self.layer2(F.relu(self.layer1(x, cat_ids)), cat_ids)


class FlowmatchingActionHead(nn.Module):
    """gr00t/model/action_head/flow_matching_action_head.py, shrunk: the DiT is one MLP."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.action_horizon = config.action_horizon
        self.num_inference_timesteps = config.num_inference_timesteps
        d = config.input_embedding_dim
        self.vlln = nn.LayerNorm(config.backbone_embedding_dim)
        self.vl_self_attention = nn.Linear(config.backbone_embedding_dim, d)
        self.state_encoder = CategorySpecificMLP(config.max_num_embodiments, config.max_state_dim, d, d)
        self.action_encoder = CategorySpecificMLP(config.max_num_embodiments, config.action_dim + 1, d, d)
        self.model = nn.Sequential(nn.Linear(2 * d, d), nn.GELU(), nn.Linear(d, d))  # DiT
        self.action_decoder = CategorySpecificMLP(config.max_num_embodiments, d, d, config.action_dim)

    def process_backbone_output(self, backbone_output):
        backbone_features = self.vlln(backbone_output["backbone_features"])
        backbone_output["backbone_features"] = self.vl_self_attention(backbone_features)
        return backbone_output

    @torch.no_grad()
    def get_action(self, backbone_output, action_input):
        backbone_output = self.process_backbone_output(backbone_output)
        vl_embeds = backbone_output["backbone_features"]
        embodiment_id = action_input["embodiment_id"]
        state_features = self.state_encoder(action_input["state"], embodiment_id)
        context = (vl_embeds.mean(1, keepdim=True) + state_features).expand(-1, self.action_horizon, -1)

        batch_size = vl_embeds.shape[0]
        actions = torch.randn(batch_size, self.config.action_horizon, self.config.action_dim,
                              dtype=vl_embeds.dtype, device=vl_embeds.device)
        num_steps = self.num_inference_timesteps
        dt = 1.0 / num_steps
        for t in range(num_steps):
            tau = torch.full((batch_size, self.action_horizon, 1), t / num_steps, device=actions.device)
            action_features = self.action_encoder(torch.cat([actions, tau], dim=-1), embodiment_id)
            model_output = self.model(torch.cat([context, action_features], dim=-1))
            pred_velocity = self.action_decoder(model_output, embodiment_id)
            actions = actions + dt * pred_velocity
        return {"action_pred": actions}


class GR00T_N1_5(nn.Module):
    """gr00t/model/gr00t_n1.py, with a one-layer stand-in for the Eagle backbone."""

    def __init__(self, action_head_cfg):
        super().__init__()
        self.backbone = nn.Linear(16, action_head_cfg.backbone_embedding_dim)
        self.action_head = FlowmatchingActionHead(action_head_cfg)
        self.action_horizon = action_head_cfg.action_horizon

    def get_action(self, inputs):
        backbone_outputs = {"backbone_features": self.backbone(inputs["eagle_features"])}
        return self.action_head.get_action(backbone_outputs, inputs)


class Gr00tPolicy:
    def __init__(self, model, modality_config, device="cuda"):
        self._modality_config = modality_config
        self.device = device
        self._load_model(model)

    def _load_model(self, model):
        # model = GR00T_N1_5.from_pretrained(model_path, torch_dtype=COMPUTE_DTYPE)
        model.eval()  # Set model to eval mode
        model.to(device=self.device)  # type: ignore

        # Update action_horizon to match modality config
        expected_action_horizon = len(self._modality_config["action"]["delta_indices"])
        if expected_action_horizon != model.action_head.config.action_horizon:
            print(f"Policy: Recreating action head with action_horizon {expected_action_horizon} "
                  f"(was {model.action_head.config.action_horizon})")
            new_action_head_config = model.action_head.config
            new_action_head_config.action_horizon = expected_action_horizon
            # Create new action head with updated config
            new_action_head = FlowmatchingActionHead(new_action_head_config)
            # Copy the weights from the old action head to the new one
            new_action_head.load_state_dict(model.action_head.state_dict(), strict=False)
            # Replace the action head
            model.action_head = new_action_head
            model.action_horizon = expected_action_horizon

        self.model = model

    def get_action(self, normalized_input):
        with torch.inference_mode():
            model_pred = self.model.get_action(normalized_input)
        return model_pred["action_pred"].float().cpu()


torch.manual_seed(0)
config = FlowmatchingActionHeadConfig(
    backbone_embedding_dim=32, input_embedding_dim=32, max_num_embodiments=4, max_state_dim=8,
    action_dim=6, action_horizon=16, num_inference_timesteps=4)
pretrained = GR00T_N1_5(config)  # the checkpoint: trained with a 16-step action horizon
modality_config = {"action": {"delta_indices": list(range(8))}}  # the robot uses 8 steps

policy = Gr00tPolicy(pretrained, modality_config, device="cuda")
step_data = {  # the transformed observation, already on the device
    "eagle_features": torch.randn(1, 5, 16, device="cuda"),
    "state": torch.randn(1, 1, 8, device="cuda"),
    "embodiment_id": torch.tensor([1], device="cuda"),
}
predicted_action = policy.get_action(step_data)
print("action chunk", tuple(predicted_action.shape), f"mean |a| = {predicted_action.abs().mean().item():.4f}")
