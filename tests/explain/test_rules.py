"""Taxonomy-level evidence rules (explain/rules.toml), each on a synthetic paste.

The pastes are written for these tests (none is copied from the dev set): each states the fact
a rule keys on, and the test checks that the rule fires, supports its family, and stays quiet
on the near miss.
"""

from __future__ import annotations

SAME = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!{tail}"


def _rules(result: dict) -> list[str]:
    return [e["rule"] for e in result["evidence"]]


def test_bmm_in_the_2x_wording_is_first_a_split_model(explain):
    # wrapper_CUDA_bmm: today mostly the rotary embedding under a device_map split; a created
    # operand comes next, never a layer left behind
    result = explain(SAME.format(a="cuda:0", b="cpu", tail=" (when checking argument for argument mat2 in method wrapper_CUDA_bmm)"))
    assert _rules(result) == ["batched-operand-on-cpu-2x"]
    assert result["families"][:2] == ["F8", "F4"]


def test_bmm_in_the_1x_wording_too(explain):
    result = explain("RuntimeError: Expected object of device type cuda but got device type cpu for argument #2 'mat2' in call to _th_bmm")
    assert result["template"] == "T4"
    assert _rules(result) == ["batched-operand-on-cpu"]
    assert result["families"][0] == "F4"


def test_addmm_mat2_on_cpu_is_still_a_layer_weight(explain):
    result = explain(SAME.format(a="cuda:0", b="cpu", tail=" (when checking argument for argument mat2 in method wrapper_CUDA_addmm)"))
    assert _rules(result) == ["weight-on-cpu"]
    assert "batched-operand-on-cpu" not in _rules(result)


def test_bmm_with_its_first_operand_on_cpu_is_not_a_layer_left_behind(explain):
    result = explain(SAME.format(a="cpu", b="cuda:0", tail=" (when checking argument for argument mat2 in method wrapper_CUDA_bmm)"))
    assert "linear-module-on-cpu" not in _rules(result)
    assert result["families"][:2] == ["F8", "F4"]


def test_collective_on_cpu_tensor_is_f6_whatever_made_the_tensor(explain):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/w/train.py", line 88, in main\n'
        "    state = torch.load(args.resume)\n"
        '  File "/w/train.py", line 97, in main\n'
        "    dist.all_reduce(total)\n"
        "RuntimeError: No backend type associated with device type cpu\n"
    )
    result = explain(text)
    assert result["template"] == "T7"
    assert "collective-on-cpu-tensor" in _rules(result)
    assert result["families"][0] == "F6"


def test_checkpoint_folder_in_a_path_is_not_restore_evidence(explain):
    text = (
        '  File "/root/.cache/huggingface/modules/transformers_modules/checkpoint-200-merged/modeling_x.py", line 12, in generate\n'
        "    out = self.lm.generate(**kw)\n"
        + SAME.format(a="cuda:1", b="cuda:0", tail="")
    )
    result = explain(text)
    assert "restore-text" not in _rules(result)
    assert result["families"][0] == "F8"


def test_checkpoint_in_the_prose_is_restore_evidence(explain):
    for prose in ("It only fails after I load the checkpoint and continue training.", "It fails with the checkpoint."):
        result = explain(prose + "\n" + SAME.format(a="cuda:0", b="cpu", tail=""))
        assert "restore-text" in _rules(result), prose
        assert result["families"][0] == "F7", prose


def test_checkpoint_file_name_is_not_restore_evidence(explain):
    result = explain("saved to runs/exp1/checkpoint.pth\n" + SAME.format(a="cuda:0", b="cpu", tail=""))
    assert "restore-text" not in _rules(result)


def test_offload_methods_of_pipelines_are_offload_evidence(explain):
    for call in (
        "pipe.enable_model_cpu_offload()",
        "pipe.enable_sequential_cpu_offload()",
        "model = cpu_offload(model, device)",
        "deepspeed --deepspeed ds_zero3_offload.json train.py",
    ):
        result = explain(call + "\n" + SAME.format(a="cuda:0", b="cpu", tail=""))
        assert "offload-text" in _rules(result), call
        assert result["families"][0] == "F8", call


def test_offload_must_start_a_word_or_follow_an_underscore(explain):
    # "payloadoffloads" holds the letters, not the word: neither a boundary nor "_" before it
    result = explain("payloadoffloads = 3\n" + SAME.format(a="cuda:0", b="cpu", tail=""))
    assert "offload-text" not in _rules(result)


def test_deepspeed_engine_frames_point_to_placement(explain):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/w/train.py", line 51, in main\n'
        "    engine.step()\n"
        '  File "/env/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 2169, in step\n'
        "    self._take_model_step(lr_kwargs)\n"
        '  File "/env/lib/python3.10/site-packages/deepspeed/runtime/bf16_optimizer.py", line 310, in step\n'
        "    self.clip_grad_norm(clip)\n"
        + SAME.format(a="cuda:0", b="cpu", tail="")
    )
    result = explain(text)
    assert "deepspeed-engine-frame" in _rules(result)
    assert result["families"][0] == "F8"


def test_lightning_sync_frame_is_lifecycle_state(explain):
    text = (
        '  File "/env/lib/python3.11/site-packages/lightning/fabric/utilities/distributed.py", line 229, in _sync_ddp\n'
        "    torch.distributed.all_reduce(result, op=op, group=group, async_op=False)\n"
        "RuntimeError: Tensors must be CUDA and dense\n"
    )
    result = explain(text)
    assert "lightning-sync-frame" in _rules(result)
    assert result["families"][0] == "F6"


def test_low_vram_modes_of_diffusion_uis_are_offload(explain):
    for log in ("Requested to load SDXL\nloaded partially 5120.0 4983.2 0", "Launching Web UI with arguments: --medvram --xformers"):
        result = explain(log + "\n" + SAME.format(a="cuda:0", b="cpu", tail=""))
        assert "offload-text" in _rules(result), log
        assert result["families"][0] == "F8", log


def test_fully_loaded_model_is_not_offload(explain):
    result = explain("Requested to load SDXL\nloaded completely 9.5 4897.0 True\n" + SAME.format(a="cuda:0", b="cpu", tail=""))
    assert "offload-text" not in _rules(result)


def test_layer_replaced_by_index_after_the_move_is_f1(explain):
    text = (
        "model = models.vgg16(weights='DEFAULT').to(device)\n"
        "model.classifier[6] = nn.Linear(4096, 10)\n"
        + SAME.format(a="cpu", b="cuda:0", tail=" (when checking argument for argument mat1 in method wrapper_CUDA_addmm)")
    )
    result = explain(text)
    assert "new-layer-assigned" in _rules(result)
    assert result["families"][0] == "F1"


def test_assigning_a_tensor_is_not_a_new_layer(explain):
    text = "model.classifier[6].weight = w\n" + SAME.format(a="cuda:0", b="cpu", tail="")
    assert "new-layer-assigned" not in _rules(explain(text))


INIT_PASTE = '''class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        {init}

    def forward(self, x):
        return self.fc(x) * self.mask

Traceback (most recent call last):
  File "/home/u/proj/run.py", line 20, in <module>
    out = net(x)
  File "/home/u/proj/net.py", line 8, in forward
    return self.fc(x) * self.mask
''' + SAME.format(a="cuda:0", b="cpu", tail="")


def test_tensor_kept_in_a_plain_attribute_is_unregistered_state(explain):
    result = explain(INIT_PASTE.format(init="self.mask = torch.ones(4)"))
    assert "tensor-attribute" in _rules(result)
    assert result["families"][0] == "F2"
    hit = next(e for e in result["evidence"] if e["rule"] == "tensor-attribute")
    assert hit["match"] == "self.mask = torch.ones(" and hit["family"] == "F2"


def test_a_registered_parameter_or_a_local_tensor_is_not_a_tensor_attribute(explain):
    for init in ("self.mask = nn.Parameter(torch.ones(4))", "mask = torch.ones(4)", "self.register_buffer('mask', torch.ones(4))"):
        assert "tensor-attribute" not in _rules(explain(INIT_PASTE.format(init=init))), init


def test_a_tensor_attribute_made_in_the_failing_line_is_a_factory_without_device(explain):
    paste = (
        'Traceback (most recent call last):\n  File "/home/u/proj/net.py", line 8, in forward\n'
        "    self.h = torch.zeros(x.shape[0], 4) + x\n" + SAME.format(a="cuda:0", b="cpu", tail="")
    )
    result = explain(paste)
    assert "factory-without-device" in _rules(result)
    assert result["families"][0] == "F4"


def test_a_second_accelerator_beside_the_cpu_points_to_placement_or_per_rank_state(explain):
    for a, b, rule in (("cuda:2", "cpu", "other-accelerator-and-cpu"), ("cpu", "xpu:1", "cpu-and-other-accelerator")):
        result = explain(SAME.format(a=a, b=b, tail=""))
        assert _rules(result) == [rule], (a, b)
        assert sorted(result["families"][:2]) == ["F6", "F8"]
        assert result["thin"] is False


def test_the_first_accelerator_beside_the_cpu_says_nothing(explain):
    for a, b in (("cuda:0", "cpu"), ("cpu", "cuda:0"), ("cuda:1", "cuda:0")):
        result = explain(SAME.format(a=a, b=b, tail=""))
        assert not {"other-accelerator-and-cpu", "cpu-and-other-accelerator"} & set(_rules(result)), (a, b)


def test_an_input_on_the_cpu_still_outweighs_the_second_accelerator(explain):
    result = explain(SAME.format(a="cuda:1", b="cpu", tail=" (when checking argument for argument mat1 in method wrapper_addmm)"))
    assert {"input-on-cpu", "other-accelerator-and-cpu"} <= set(_rules(result))
    assert result["families"][0] == "F3"


def test_item_at_the_end_of_the_line_is_not_a_transfer_but_the_labels_are_evidence(explain):
    text = 'Traceback (most recent call last):\n  File "/w/train.py", line 90, in <module>\n    mae += torch.abs(predict.sum() - gt).item()\n' + SAME.format(a="cuda:0", b="cpu", tail="")
    assert _rules(explain(text)) == ["label-in-failing-line"]


def test_labels_assigned_or_moved_in_the_failing_line_say_nothing(explain):
    for line in ("labels = batch['labels']", "out = model(x, labels.to(device))", "def loss(pred, target):"):
        text = f'Traceback (most recent call last):\n  File "/w/train.py", line 9, in step\n    {line}\n' + SAME.format(a="cuda:0", b="cpu", tail="")
        assert "label-in-failing-line" not in _rules(explain(text)), line


def test_sharding_frameworks_in_the_prose_point_to_placement(explain):
    for prose in ("with deepspeed zero2", "FSDP training", "wrapped in FullyShardedDataParallel", "Megatron-LM run"):
        result = explain(prose + "\n" + SAME.format(a="cuda:0", b="cpu", tail=""))
        assert "sharding-framework-text" in _rules(result), prose
        assert result["families"][0] == "F8", prose


def test_plain_list_of_modules(explain):
    for code in ("self.layers = []", "self.heads = [nn.Linear(4, 4) for _ in range(3)]", "self.blocks = [Block(d) for d in dims]"):
        assert "plain-list-of-modules" in _rules(explain(code + "\n" + SAME.format(a="cuda:0", b="cpu", tail=""))), code
    for code in ("self.layers = nn.ModuleList([])", "self.validation_step_outputs = []", "self.history = {}"):
        assert "plain-list-of-modules" not in _rules(explain(code + "\n" + SAME.format(a="cuda:0", b="cpu", tail=""))), code


def test_labels_handed_on_to_a_helper_are_not_an_operand(explain):
    text = 'Traceback (most recent call last):\n  File "/w/loss.py", line 66, in compute_loss\n    tcls, tbox = build_targets(p, targets, model)\n' + SAME.format(a="cuda:0", b="cpu", tail="")
    assert "label-in-failing-line" not in _rules(explain(text))


def test_mps_beside_the_cpu_lifts_created_tensors_only_on_mps(explain):
    assert "mps-and-cpu" in _rules(explain(SAME.format(a="mps:0", b="cpu", tail="")))
    assert "mps-and-cpu" not in _rules(explain(SAME.format(a="cuda:0", b="cpu", tail="")))


def test_index_argument_three_of_a_cut_1x_text_is_index_selects_ids(explain):
    result = explain("RuntimeError: Expected object of backend CUDA but got backend CPU for argument #3 'index'")
    assert result["template"] == "T4"
    assert "index-select-ids-on-cpu-1x" in _rules(result)
    assert result["families"][0] == "F3"
    # another argument number is not index_select's index
    other = explain("RuntimeError: Expected object of backend CUDA but got backend CPU for argument #2 'index'")
    assert "index-select-ids-on-cpu-1x" not in _rules(other)


def test_a_schedule_table_indexed_by_timesteps_is_unregistered_state(explain):
    paste = (
        'Traceback (most recent call last):\n  File "/home/u/sd/pipeline.py", line 86, in __call__\n'
        "    alpha_prod_t = self.scheduler.alphas_cumprod[t]\n"
        "RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)"
    )
    result = explain(paste)
    assert result["template"] == "T6"
    assert "schedule-table-index" in _rules(result)
    assert result["families"][0] == "F2"
    # a lookup table of another name stays with the catalogue's reading (move the indices)
    plain = explain(paste.replace("self.scheduler.alphas_cumprod[t]", "self.table[t]"))
    assert "schedule-table-index" not in _rules(plain)
    assert plain["families"][0] == "F9"


def test_a_convolution_weight_on_the_cpu_names_a_restored_model_third(explain):
    result = explain(
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same"
    )
    assert _rules(result) == ["conv-model-not-moved"]
    assert result["families"][:3] == ["F3", "F2", "F7"]
