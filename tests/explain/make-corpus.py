#!/usr/bin/env python3
"""Source of truth for the `gpuctl explain` test corpus in this folder.

Writes NN-name.log and NN-name.expect for every case below (the exact bytes:
ANSI escapes, CRLF line endings, tqdm carriage returns), then checks each log
against a handful of plain regexes to catch a finding written by mistake into
the noise. Run it from anywhere:  python3 tests/explain/make-corpus.py

Failure lines use the wording the real software prints (PyTorch, NCCL,
TensorFlow, cupy, nccl-tests, the NVIDIA kernel driver); the surrounding noise
is invented. Expected values for PyTorch OOM messages are computed from the
sizes as printed, so the .expect files cannot drift from the logs.

Counting rule (the contract): `count` is the number of LINES that match the
signature, so one rank that prints the watchdog message three times (log line,
"thread terminated with exception" line, `what():` line) counts three. Values
listed in an .expect are those every matching line of that finding agrees on;
a value that differs from line to line (rank, ran_ms, gpu, pci) is listed only
when the finding has a single line or all lines agree.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ESC = "\x1b"


def B(s):
    """A block of lines written at column 0 in this file."""
    return s.strip("\n").split("\n")


# --------------------------------------------------------------------------
# PyTorch OOM messages and their expected values
# --------------------------------------------------------------------------

def mib(s):
    v, unit = s.split()
    v = float(v)
    return round({"bytes": v / 1048576, "KiB": v / 1024, "MiB": v, "GiB": v * 1024}[unit], 4)


def verdict(requested, other, frag, total):
    if requested >= 100 * total:
        return "size-bug"
    if other >= requested:
        return "other-process"
    if frag >= requested:
        return "fragmentation"
    return "too-big"


TAIL_NEW = ("If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
            "See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
TAIL_21 = ("If reserved but unallocated memory is large try setting max_split_size_mb to avoid "
           "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
TAIL_OLD = ("If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
            "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")


def oom_new(req, gpu, total, free, procs, this, alloc, unalloc, exc="torch.OutOfMemoryError",
            tail=TAIL_NEW, capacity="capacity"):
    """PyTorch >= 2.1. procs: [(pid, size)] for 'Process N has' sentences; this: size for
    'Including non-PyTorch memory, this process has', or None."""
    msg = (f"{exc}: CUDA out of memory. Tried to allocate {req}. GPU {gpu} has a total "
           f"{capacity} of {total} of which {free} is free. ")
    for pid, size in procs:
        msg += f"Process {pid} has {size} memory in use. "
    if this is not None:
        msg += f"Including non-PyTorch memory, this process has {this} memory in use. "
    msg += (f"Of the allocated memory {alloc} is allocated by PyTorch, and {unalloc} is "
            f"reserved by PyTorch but unallocated. {tail}")
    if this is not None:
        other = sum(mib(s) for _, s in procs)
    else:
        # without the "this process" sentence the corpus only uses a single
        # "Process N has" sentence, which is this process itself
        assert len(procs) <= 1
        other = 0
    vals = {"requested_mib": mib(req), "total_mib": mib(total), "free_mib": mib(free),
            "gpu": gpu, "allocated_mib": mib(alloc), "reserved_unallocated_mib": mib(unalloc),
            "other_processes_mib": round(other, 4)}
    vals["verdict"] = verdict(vals["requested_mib"], other, vals["reserved_unallocated_mib"],
                             vals["total_mib"])
    return msg, vals


def oom_old(req, gpu, total, allocated, free, reserved, exc="RuntimeError", tail=TAIL_OLD):
    """PyTorch <= 2.0."""
    msg = (f"{exc}: CUDA out of memory. Tried to allocate {req} (GPU {gpu}; {total} total "
           f"capacity; {allocated} already allocated; {free} free; {reserved} reserved in total "
           f"by PyTorch)")
    if tail:
        msg += " " + tail
    frag = round(mib(reserved) - mib(allocated), 4)
    vals = {"requested_mib": mib(req), "total_mib": mib(total), "free_mib": mib(free), "gpu": gpu,
            "allocated_mib": mib(allocated), "reserved_mib": mib(reserved),
            "reserved_unallocated_mib": frag}
    vals["verdict"] = verdict(vals["requested_mib"], 0, frag, vals["total_mib"])
    return msg, vals


def pick(vals, *keys):
    return {k: vals[k] for k in keys}


def F(id, count, values=None, **more):
    """a finding as expected; more: root (True for the root cause), rank (its first), ranks (all)"""
    return {"id": id, "count": count, "values": values or {}, **more}


CUDA_TAIL = B("""
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
""")
CUDA_TAIL_OLD = B("""
CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
""")

CASES = []


def case(name, lines, findings, eol="\n"):
    CASES.append({"name": name, "lines": lines, "findings": findings, "eol": eol})


# ==========================================================================
# 01  new-format OOM, single "Process N has" sentence (this process) -> fragmentation
# ==========================================================================
m, v = oom_new("1.96 GiB", 0, "79.14 GiB", "1.45 GiB", [(48213, "77.68 GiB")], None,
               "74.90 GiB", "2.27 GiB")
case("oom-fragmentation", B("""
2024-06-14 09:01:12,345 INFO     train.py:88   Loading config configs/llama-7b-sft.yaml
2024-06-14 09:01:12,346 INFO     train.py:91   world_size=1 rank=0 device=cuda:0 dtype=bfloat16
2024-06-14 09:01:19,802 INFO     model.py:211  Loaded 6.74B parameters in 7.4s
2024-06-14 09:01:20,117 INFO     data.py:54    Train samples: 52002, eval samples: 2000
2024-06-14 09:01:20,118 INFO     train.py:140  Starting epoch 1/3, grad_accum=8, micro_batch=4, seq_len=2048
Epoch 1:   0%|          | 0/1625 [00:00<?, ?it/s]
Epoch 1:   1%|          | 10/1625 [00:21<57:03,  2.12s/it, loss=1.842, lr=2.0e-05]
Epoch 1:   1%|          | 20/1625 [00:42<56:40,  2.12s/it, loss=1.611, lr=2.0e-05]
Epoch 1:   2%|▏         | 30/1625 [01:03<56:18,  2.12s/it, loss=1.502, lr=2.0e-05]
2024-06-14 09:02:24,551 INFO     train.py:171  step=30 loss=1.5021 grad_norm=0.88 tokens/s=3862
Epoch 1:   2%|▏         | 37/1625 [01:18<56:09,  2.12s/it, loss=1.488, lr=2.0e-05]
Traceback (most recent call last):
  File "/workspace/sft/train.py", line 236, in <module>
    main()
  File "/workspace/sft/train.py", line 162, in main
    loss = model(**batch).loss
           ^^^^^^^^^^^^^^^^^^^
  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1747, in _call_impl
    return forward_call(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/opt/conda/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", line 1189, in forward
    logits = logits.float()
             ^^^^^^^^^^^^^^
""") + [m] + B("""
Epoch 1:   2%|▏         | 37/1625 [01:19<56:11,  2.12s/it, loss=1.488, lr=2.0e-05]
"""), [F("pytorch-oom", 1, v)])

# ==========================================================================
# 02  new format, "Including non-PyTorch memory" -> too-big (HF Trainer, torch 2.2)
# ==========================================================================
m, v = oom_new("10.50 GiB", 0, "39.39 GiB", "6.82 GiB", [], "32.56 GiB", "31.48 GiB",
               "598.36 MiB", exc="torch.cuda.OutOfMemoryError")
case("oom-too-big", B("""
[INFO|trainer.py:2048] 2024-05-02 16:40:11,212 >> ***** Running training *****
[INFO|trainer.py:2049] 2024-05-02 16:40:11,212 >>   Num examples = 120,000
[INFO|trainer.py:2050] 2024-05-02 16:40:11,212 >>   Num Epochs = 1
[INFO|trainer.py:2051] 2024-05-02 16:40:11,212 >>   Instantaneous batch size per device = 16
[INFO|trainer.py:2054] 2024-05-02 16:40:11,212 >>   Total train batch size (w. parallel, distributed & accumulation) = 64
[INFO|trainer.py:2055] 2024-05-02 16:40:11,212 >>   Gradient Accumulation steps = 4
[INFO|trainer.py:2056] 2024-05-02 16:40:11,212 >>   Total optimization steps = 1,875
[INFO|trainer.py:2057] 2024-05-02 16:40:11,214 >>   Number of trainable parameters = 1,543,714,816
  0%|          | 0/1875 [00:00<?, ?it/s]
Traceback (most recent call last):
  File "/home/ci/finetune/run_clm.py", line 655, in <module>
    main()
  File "/home/ci/finetune/run_clm.py", line 603, in main
    train_result = trainer.train(resume_from_checkpoint=checkpoint)
  File "/home/ci/.venv/lib/python3.10/site-packages/transformers/trainer.py", line 1859, in train
    return inner_training_loop(
  File "/home/ci/.venv/lib/python3.10/site-packages/transformers/trainer.py", line 2203, in _inner_training_loop
    tr_loss_step = self.training_step(model, inputs)
  File "/home/ci/.venv/lib/python3.10/site-packages/transformers/trainer.py", line 3138, in training_step
    loss = self.compute_loss(model, inputs)
  File "/home/ci/.venv/lib/python3.10/site-packages/transformers/trainer.py", line 3161, in compute_loss
    outputs = model(**inputs)
  File "/home/ci/.venv/lib/python3.10/site-packages/transformers/models/qwen2/modeling_qwen2.py", line 1183, in forward
    logits = logits.float()
""") + [m] + B("""
  0%|          | 0/1875 [00:04<?, ?it/s]
"""), [F("pytorch-oom", 1, v)])

# ==========================================================================
# 03  new format, another process holds the GPU -> other-process (diffusers UI)
# ==========================================================================
m, v = oom_new("4.00 GiB", 0, "23.55 GiB", "2.31 GiB", [(1187, "14.20 GiB")], "7.02 GiB",
               "6.41 GiB", "148.27 MiB")
case("oom-other-process", B("""
Running on local URL:  http://127.0.0.1:7860
To create a public link, set `share=True` in `launch()`.
Loading pipeline components...: 100%|██████████| 7/7 [00:03<00:00,  2.05it/s]
INFO:sdxl_app:pipeline ready on cuda:0 (fp16, attention=sdpa)
INFO:sdxl_app:request 7f3a prompt='a lighthouse at dusk, oil painting' steps=30 size=1024x1024
100%|██████████| 30/30 [00:09<00:00,  3.21it/s]
INFO:sdxl_app:request 7f3a done in 10.4s
INFO:sdxl_app:request 81c0 prompt='isometric city block, night' steps=30 size=2048x2048
  0%|          | 0/30 [00:00<?, ?it/s]
Traceback (most recent call last):
  File "/opt/app/venv/lib/python3.11/site-packages/gradio/queueing.py", line 536, in process_events
    response = await route_utils.call_process_api(
  File "/opt/app/venv/lib/python3.11/site-packages/gradio/blocks.py", line 1935, in process_api
    result = await self.call_function(
  File "/opt/app/sdxl_app.py", line 74, in generate
    image = pipe(prompt, num_inference_steps=steps, height=h, width=w).images[0]
  File "/opt/app/venv/lib/python3.11/site-packages/diffusers/models/attention_processor.py", line 1279, in __call__
    hidden_states = F.scaled_dot_product_attention(
""") + [m] + B("""
INFO:sdxl_app:request 81c0 failed
"""), [F("pytorch-oom", 1, v)])

# ==========================================================================
# 04  old format (torch 1.12), RuntimeError -> fragmentation
# ==========================================================================
m, v = oom_old("50.00 MiB", 0, "15.78 GiB", "14.21 GiB", "27.19 MiB", "14.56 GiB")
case("oom-old-format", B("""
=> creating model 'resnet152'
=> using mixed precision: False
Epoch: [0][   0/5005]	Time  4.812 ( 4.812)	Data  3.102 ( 3.102)	Loss 6.9893e+00 (6.9893e+00)	Acc@1   0.00 (  0.00)	Acc@5   0.39 (  0.39)
Epoch: [0][  10/5005]	Time  0.611 ( 0.993)	Data  0.001 ( 0.283)	Loss 6.9741e+00 (6.9850e+00)	Acc@1   0.00 (  0.04)	Acc@5   0.39 (  0.43)
Epoch: [0][  20/5005]	Time  0.608 ( 0.810)	Data  0.001 ( 0.149)	Loss 6.9402e+00 (6.9712e+00)	Acc@1   0.39 (  0.09)	Acc@5   0.78 (  0.52)
=> switching to evaluation of checkpoint every 20 iterations
Traceback (most recent call last):
  File "main.py", line 484, in <module>
    main()
  File "main.py", line 117, in main
    main_worker(args.gpu, ngpus_per_node, args)
  File "main.py", line 251, in main_worker
    train(train_loader, model, criterion, optimizer, epoch, args)
  File "main.py", line 300, in train
    output = model(images)
  File "/usr/local/lib/python3.8/dist-packages/torch/nn/modules/module.py", line 1130, in _call_impl
    return forward_call(*input, **kwargs)
  File "/usr/local/lib/python3.8/dist-packages/torchvision/models/resnet.py", line 285, in forward
    return self._forward_impl(x)
  File "/usr/local/lib/python3.8/dist-packages/torchvision/models/resnet.py", line 275, in _forward_impl
    x = self.layer3(x)
  File "/usr/local/lib/python3.8/dist-packages/torch/nn/modules/conv.py", line 453, in _conv_forward
    return F.conv2d(input, weight, bias, self.stride,
""") + [m], [F("pytorch-oom", 1, v)])

# ==========================================================================
# 05  new format, sizes in MiB, small GPU -> fragmentation
# ==========================================================================
m, v = oom_new("384.00 MiB", 0, "5.79 GiB", "98.56 MiB", [], "5.62 GiB", "4.97 GiB",
               "513.29 MiB", exc="torch.cuda.OutOfMemoryError")
case("oom-mib-units", B("""
[12:03:44] INFO  yolo-train: Ultralytics-style trainer, device=0 (NVIDIA GeForce RTX 2060, 5927MiB)
[12:03:44] INFO  yolo-train: imgsz=1280 batch=8 workers=4 amp=True
[12:03:46] INFO  yolo-train: Scanning /data/drone/labels/train.cache... 7431 images, 12 backgrounds, 0 corrupt
[12:03:47] INFO  yolo-train: Starting training for 100 epochs...

      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
      1/100      4.81G      1.912      3.004      1.487        141       1280:   6%|▌         | 55/929 [00:38<10:07,  1.44it/s]
      1/100      5.38G      1.897      2.981      1.479        166       1280:   6%|▌         | 56/929 [00:39<10:11,  1.43it/s]
Traceback (most recent call last):
  File "/home/kai/det/train.py", line 131, in <module>
    trainer.fit()
  File "/home/kai/det/engine.py", line 288, in fit
    self.scaler.scale(loss).backward()
  File "/home/kai/.local/lib/python3.10/site-packages/torch/_tensor.py", line 522, in backward
    torch.autograd.backward(
  File "/home/kai/.local/lib/python3.10/site-packages/torch/autograd/__init__.py", line 266, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
""") + [m], [F("pytorch-oom", 1, v)])

# ==========================================================================
# 06  old format (torch 2.0 class name), GPU 1 -> too-big
# ==========================================================================
m, v = oom_old("3.52 GiB", 1, "23.69 GiB", "17.83 GiB", "2.91 GiB", "18.24 GiB",
               exc="torch.cuda.OutOfMemoryError")
case("oom-old-format-too-big", B("""
2023-09-21 22:15:03 | INFO | fairseq_cli.train | task: TranslationTask
2023-09-21 22:15:03 | INFO | fairseq_cli.train | model: TransformerModel
2023-09-21 22:15:03 | INFO | fairseq_cli.train | num. shared model params: 409,915,392 (num. trained: 409,915,392)
2023-09-21 22:15:05 | INFO | fairseq.trainer | detected shared parameter: encoder.embed_tokens.weight <- decoder.embed_tokens.weight
2023-09-21 22:15:05 | INFO | fairseq.utils | ***********************CUDA enviroments for all 1 workers***********************
2023-09-21 22:15:05 | INFO | fairseq.utils | rank   0: capabilities =  8.6  ; total memory = 23.691 GB ; name = NVIDIA GeForce RTX 3090
2023-09-21 22:15:05 | INFO | fairseq.utils | ***********************CUDA enviroments for all 1 workers***********************
2023-09-21 22:15:05 | INFO | fairseq_cli.train | max tokens per device = 16384 and max sentences per device = None
2023-09-21 22:15:09 | INFO | fairseq.trainer | begin training epoch 1
epoch 001:   0%|          | 0/2741 [00:00<?, ?it/s]
Traceback (most recent call last):
  File "/opt/conda/bin/fairseq-train", line 8, in <module>
    sys.exit(cli_main())
  File "/opt/conda/lib/python3.10/site-packages/fairseq/trainer.py", line 855, in train_step
    loss, sample_size_i, logging_output = self.task.train_step(
  File "/opt/conda/lib/python3.10/site-packages/fairseq/criterions/label_smoothed_cross_entropy.py", line 79, in forward
    net_output = model(**sample["net_input"])
  File "/opt/conda/lib/python3.10/site-packages/fairseq/models/transformer/transformer_decoder.py", line 361, in output_layer
    return self.output_projection(features)
""") + [m] + B("""
epoch 001:   0%|          | 0/2741 [00:06<?, ?it/s]
"""), [F("pytorch-oom", 1, v)])

# ==========================================================================
# 07  same OOM on four DDP ranks (torch 2.4, [rankN]: prefixes) -> count 4
# ==========================================================================
TR = "W0614 11:02:41.118000 140237195441984 torch/distributed/run.py:779]"
lines = B(f"""
{TR} 
{TR} *****************************************
{TR} Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. 
{TR} *****************************************
[2024-06-14 11:02:49,301] [INFO] [train.py:61:main] rank=0 world_size=4 model=vit_huge_patch14_224 global_batch=1024
[2024-06-14 11:03:12,880] [INFO] [train.py:140:main] step    100 | loss 6.4410 | lr 1.20e-04 | 411.7 img/s/gpu
[2024-06-14 11:03:37,425] [INFO] [train.py:140:main] step    200 | loss 6.1127 | lr 2.40e-04 | 412.0 img/s/gpu
[2024-06-14 11:03:51,002] [INFO] [train.py:118:main] switching to resolution 336 (progressive resizing)
""")
vals = None
for rank, pid in ((2, 7712), (0, 7710), (3, 7713), (1, 7711)):
    m, vals = oom_new("3.00 GiB", rank, "79.15 GiB", "1.87 GiB", [(pid, "77.27 GiB")], None,
                      "73.05 GiB", "3.21 GiB")
    lines += [f"[rank{rank}]: " + s for s in B("""
Traceback (most recent call last):
  File "/workspace/vit/train.py", line 214, in <module>
    main()
  File "/workspace/vit/train.py", line 177, in main
    scaler.scale(loss).backward()
  File "/usr/local/lib/python3.10/dist-packages/torch/autograd/graph.py", line 768, in _engine_run_backward
    return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
""") + [m]]
lines += B("""
W0614 11:03:53.552000 140237195441984 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 7711 closing signal SIGTERM
E0614 11:03:53.931000 140237195441984 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 0 (pid: 7710) of binary: /usr/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-06-14_11:03:53
  host      : dgx-h100-04
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 7710)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
""")
# one finding per GPU an OOM names: four ranks on four GPUs are four findings (issue 36)
# torchrun's summary names rank 0 as the first to fail: its OOM, the second in the file, is the root cause
case("oom-multirank-ddp", lines, [F("pytorch-oom", 1, pick(
    vals, "requested_mib", "total_mib", "free_mib", "allocated_mib", "reserved_unallocated_mib",
    "other_processes_mib", "verdict"), rank=r, root=r == 0) for r in (2, 0, 3, 1)])

# ==========================================================================
# 08  two other processes whose SUM exceeds the request (each alone does not);
#     the cache is fragmented too, but other-process wins by order
# ==========================================================================
m, v = oom_new("5.00 GiB", 0, "79.14 GiB", "4.49 GiB", [(2211, "3.50 GiB"), (2298, "2.75 GiB")],
               "68.40 GiB", "57.10 GiB", "10.62 GiB")
assert v["verdict"] == "other-process"
case("oom-two-other-processes", B("""
$ CUDA_VISIBLE_DEVICES=0 python eval_longctx.py --model /ckpt/mistral-7b-128k --ctx 131072
[eval] 2024-08-03 10:11:02 loading tokenizer
[eval] 2024-08-03 10:11:04 loading model (bf16, flash_attention_2)
[eval] 2024-08-03 10:11:31 model on cuda:0, 14.48 GB
[eval] 2024-08-03 10:11:31 needle-in-haystack: 20 depths x 8 lengths
[eval] 2024-08-03 10:12:50 len=16384  depth=0.00 score=1.00
[eval] 2024-08-03 10:14:02 len=32768  depth=0.00 score=1.00
[eval] 2024-08-03 10:16:41 len=65536  depth=0.00 score=1.00
[eval] 2024-08-03 10:21:19 len=131072 depth=0.00 ...
Traceback (most recent call last):
  File "/home/rl/eval_longctx.py", line 210, in <module>
    run(args)
  File "/home/rl/eval_longctx.py", line 168, in run
    out = model.generate(**enc, max_new_tokens=32, do_sample=False)
  File "/home/rl/.venv/lib/python3.11/site-packages/transformers/generation/utils.py", line 2024, in generate
    result = self._sample(
  File "/home/rl/.venv/lib/python3.11/site-packages/transformers/models/mistral/modeling_mistral.py", line 1055, in forward
    logits = logits.float()
""") + [m], [F("pytorch-oom", 1, v)])

# ==========================================================================
# 09  PyTorch 2.1.x printed "capacty" (sic); KiB units; single process -> too-big
# ==========================================================================
m, v = oom_new("96.00 MiB", 0, "14.75 GiB", "704.00 KiB", [(20398, "14.74 GiB")], None,
               "14.21 GiB", "40.12 MiB", exc="torch.cuda.OutOfMemoryError", tail=TAIL_21,
               capacity="capacty")
case("oom-capacty-typo-kib", B("""
[I 2023-12-18 06:02:11.402 ServerApp] Kernel started: 5a1c0d7e-4a52-4b44-9d5e-0c1e0b2c9a11
[I 2023-12-18 06:02:14.180 ServerApp] Connecting to kernel 5a1c0d7e-4a52-4b44-9d5e-0c1e0b2c9a11.
torch 2.1.2+cu121  cuda available: True  device: Tesla T4
batch_size=256 block_size=512 n_layer=12 n_head=12 n_embd=768
step 0: train loss 10.9861, val loss 10.9858
step 50: train loss 6.8123, val loss 6.8650
step 100: train loss 5.9411, val loss 6.0187
---------------------------------------------------------------------------
OutOfMemoryError                          Traceback (most recent call last)
Cell In[14], line 9
      7 for it in range(max_iters):
      8     xb, yb = get_batch("train")
----> 9     logits, loss = model(xb, yb)
     10     optimizer.zero_grad(set_to_none=True)
     11     loss.backward()

File ~/gpt/model.py:79, in CausalSelfAttention.forward(self, x)
     78 k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
---> 79 att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))

""") + [m.replace("torch.cuda.OutOfMemoryError", "OutOfMemoryError")] + B("""
[I 2023-12-18 06:19:40.006 ServerApp] Saving file at /gpt/train.ipynb
"""), [F("pytorch-oom", 1, v)])

# ==========================================================================
# 10  NCCL watchdog timeout, one rank, torch 2.1 (the message is printed 3 times)
# ==========================================================================
w = ("[Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18233, "
     "OpType=ALLREDUCE, NumelIn=25690112, NumelOut=25690112, Timeout(ms)=1800000) ran for "
     "1800421 milliseconds before timing out.")
case("nccl-watchdog-single-rank", B("""
[2024-02-08 03:12:55,019][train][INFO] - epoch 4 iter 9200/12000 loss 2.0931 lr 4.1e-04 (rank 5)
[2024-02-08 03:13:21,774][train][INFO] - epoch 4 iter 9250/12000 loss 2.1017 lr 4.1e-04 (rank 5)
[2024-02-08 03:13:48,300][train][INFO] - epoch 4 iter 9300/12000 loss 2.0866 lr 4.1e-04 (rank 5)
[2024-02-08 03:14:02,118][train][INFO] - saving shard checkpoint to /ckpt/run17/iter_9300/rank5.pt
""") + ["[E ProcessGroupNCCL.cpp:475] " + w] + B("""
[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[E ProcessGroupNCCL.cpp:495] To avoid data inconsistency, we are taking the entire process down.
""") + ["[E ProcessGroupNCCL.cpp:916] [Rank 5] NCCL watchdog thread terminated with exception: " + w,
        "terminate called after throwing an instance of 'std::runtime_error'",
        "  what():  [Rank 5] NCCL watchdog thread terminated with exception: " + w] + B("""
Fatal Python error: Aborted

Thread 0x00007f1c2effd640 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 324 in wait
  File "/usr/lib/python3.10/threading.py", line 607 in wait
  File "/usr/local/lib/python3.10/dist-packages/tqdm/_monitor.py", line 60 in run

Current thread 0x00007f1d4f9c2740 (most recent call first):
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 2050 in all_reduce
  File "/workspace/train.py", line 301 in save_checkpoint
/var/spool/slurmd/job4412871/slurm_script: line 38: 20771 Aborted                 (core dumped) python train.py
"""), [F("nccl-watchdog-timeout", 4, {"rank": 5, "seq": 18233, "op": "ALLREDUCE",
                                      "timeout_ms": 1800000, "ran_ms": 1800421})])

# ==========================================================================
# 11  NCCL watchdog timeout on three ranks, torch 2.4 format, _ALLGATHER_BASE (FSDP)
# ==========================================================================
lines = B("""
[2024-09-30 14:01:10,223] torch.distributed.fsdp: FSDP wrapping 32 LlamaDecoderLayer blocks, sharding=FULL_SHARD
[2024-09-30 14:01:12,905] train: rank 0/4 ready, local batch 8, seq 4096
[2024-09-30 14:03:40,113] train: step 50 loss 2.413 tok/s/gpu 3911
[2024-09-30 14:06:08,700] train: step 100 loss 2.207 tok/s/gpu 3907
[2024-09-30 14:06:09,002] train: evaluating on rank 2 only (val split)
""")
for r, ran, pid, ns in ((0, 600089, 90211, "338120102"), (3, 600091, 90214, "339004811"),
                        (1, 600095, 90212, "341277430")):
    w = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4410, "
         f"OpType=_ALLGATHER_BASE, NumelIn=16777216, NumelOut=67108864, Timeout(ms)=600000) ran "
         f"for {ran} milliseconds before timing out.")
    p = f"[rank{r}]:[E930 14:16:09.{ns} ProcessGroupNCCL.cpp"
    lines += [
        f"{p}:616] {w}",
        f"{p}:1785] [PG 0 (default_pg) Rank {r}] Exception (either an error or timeout) detected by watchdog at work: 4410, last enqueued NCCL work: 4411, last completed NCCL work: 4409.",
        f"{p}:1834] [PG 0 (default_pg) Rank {r}] Timeout at NCCL work: 4410, last enqueued NCCL work: 4411, last completed NCCL work: 4409.",
        f"{p}:630] [Rank {r}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"{p}:636] [Rank {r}] To avoid data inconsistency, we are taking the entire process down.",
        f"{p}:1595] [PG 0 (default_pg) Rank {r}] Process group watchdog thread terminated with exception: {w}",
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f8a1a96cf86 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f8a1bc6a8d2 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
        "",
    ]
lines += B("""
E0930 14:16:11.118000 139804377311040 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -6) local_rank: 0 (pid: 90211) of binary: /usr/bin/python3
  exitcode  : -6 (pid: 90211)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 90211
""")
case("nccl-watchdog-multirank-allgather", lines,
     [F("nccl-watchdog-timeout", 9, {"seq": 4410, "op": "_ALLGATHER_BASE", "timeout_ms": 600000})])

# ==========================================================================
# 12  NCCL watchdog timeout on the first BROADCAST (DDP init), torch 2.2, multi-node
# ==========================================================================
w = ("[Rank 8] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, "
     "NumelIn=76668, NumelOut=76668, Timeout(ms)=1800000) ran for 1800575 milliseconds before "
     "timing out.")
case("nccl-watchdog-broadcast-init", B("""
node-b07:61412:61412 [0] NCCL INFO Bootstrap : Using bond0:10.40.7.17<0>
node-b07:61412:61412 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation
node-b07:61412:61412 [0] NCCL INFO cudaDriverVersion 12020
NCCL version 2.19.3+cuda12.3
node-b07:61412:61790 [0] NCCL INFO NET/IB : No device found.
node-b07:61412:61790 [0] NCCL INFO NET/Socket : Using [0]bond0:10.40.7.17<0> [1]docker0:172.17.0.1<0>
node-b07:61412:61790 [0] NCCL INFO Using non-device net plugin version 0
node-b07:61412:61790 [0] NCCL INFO Using network Socket
node-b07:61412:61790 [0] NCCL INFO comm 0x55c1e0f3a2b0 rank 8 nranks 16 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x3f0c9a5e71d2b844 - Init START
node-b07:61412:61790 [0] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15
node-b07:61412:61790 [0] NCCL INFO Connected all rings
node-b07:61412:61790 [0] NCCL INFO Connected all trees
node-b07:61412:61790 [0] NCCL INFO comm 0x55c1e0f3a2b0 rank 8 nranks 16 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x3f0c9a5e71d2b844 - Init COMPLETE
""") + ["[rank8]:[E ProcessGroupNCCL.cpp:523] " + w] + B("""
[rank8]:[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank8]:[E ProcessGroupNCCL.cpp:543] To avoid data inconsistency, we are taking the entire process down.
""") + ["[rank8]:[E ProcessGroupNCCL.cpp:1182] [Rank 8] NCCL watchdog thread terminated with exception: " + w,
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:525 (most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f03ab77ad87 in /opt/venv/lib/python3.11/site-packages/torch/lib/libc10.so)",
        "",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  [Rank 8] NCCL watchdog thread terminated with exception: " + w] + B("""
srun: error: node-b07: task 8: Aborted (core dumped)
srun: launch/slurm: _step_signal: Terminating StepId=771203.0
"""), [F("nccl-watchdog-timeout", 4, {"rank": 8, "seq": 1, "op": "BROADCAST",
                                      "timeout_ms": 1800000, "ran_ms": 1800575})])

# ==========================================================================
# 13  CUDA driver too old for the runtime, Linux container
# ==========================================================================
case("cuda-driver-insufficient", B("""
==========
== CUDA ==
==========

CUDA Version 12.4.1

Container image Copyright (c) 2016-2023, NVIDIA CORPORATION & AFFILIATES. All rights reserved.

+ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
Tesla V100-SXM2-32GB, 470.182.03
+ python -m fastconv.selftest
fastconv 0.9.2 (built against CUDA 12.4)
Traceback (most recent call last):
  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/opt/fastconv/fastconv/selftest.py", line 22, in <module>
    out = fused_conv_bn_relu(x, w, b)
  File "/opt/fastconv/fastconv/ops.py", line 58, in fused_conv_bn_relu
    return _C.fused_conv_bn_relu(x, w, b, eps)
RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version
""") + CUDA_TAIL, [F("cuda-driver-insufficient", 1)])

# ==========================================================================
# 14  CUDA driver too old, TensorFlow on Windows, CRLF line endings
# ==========================================================================
case("cuda-driver-insufficient-windows-crlf", B(r"""
(tf210) C:\Users\mkowalski\projects\segm>python train.py --epochs 40
2024-03-02 14:21:07.512340: I tensorflow/core/platform/cpu_feature_guard.cc:193] This TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX AVX2
To enable them in other operations, rebuild TensorFlow with the appropriate compiler flags.
2024-03-02 14:21:07.873112: I tensorflow/core/common_runtime/process_util.cc:146] Creating new thread pool with default inter op setting: 2. Tune using inter_op_parallelism_threads for best performance.
Found 2975 files belonging to 19 classes.
Traceback (most recent call last):
  File "C:\Users\mkowalski\projects\segm\train.py", line 88, in <module>
    with tf.device("/GPU:0"):
  File "C:\Users\mkowalski\miniconda3\envs\tf210\lib\site-packages\tensorflow\python\framework\ops.py", line 5537, in device
    return context.device(device_name_or_function)
  File "C:\Users\mkowalski\miniconda3\envs\tf210\lib\site-packages\tensorflow\python\eager\context.py", line 2319, in device
    ensure_initialized()
  File "C:\Users\mkowalski\miniconda3\envs\tf210\lib\site-packages\tensorflow\python\eager\context.py", line 601, in ensure_initialized
    context_handle = pywrap_tfe.TFE_NewContext(opts)
tensorflow.python.framework.errors_impl.InternalError: cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version

(tf210) C:\Users\mkowalski\projects\segm>
"""), [F("cuda-driver-insufficient", 1)], eol="\r\n")

# ==========================================================================
# 15  no GPU visible in the pod
# ==========================================================================
case("no-cuda-device", B("""
2024-07-09T08:14:02.118Z INFO  entrypoint: starting worker job=embed-batch-0419 shard=12/64
2024-07-09T08:14:02.119Z INFO  entrypoint: NVIDIA_VISIBLE_DEVICES=void CUDA_VISIBLE_DEVICES=
2024-07-09T08:14:03.877Z INFO  worker: loading sentence encoder e5-large-v2
2024-07-09T08:14:09.402Z INFO  worker: torch 2.3.1+cu121, cuda build 12.1
Traceback (most recent call last):
  File "/app/worker.py", line 96, in <module>
    main()
  File "/app/worker.py", line 71, in main
    model = AutoModel.from_pretrained(MODEL).half().to("cuda")
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1173, in to
    return self._apply(convert)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line 779, in _apply
    module._apply(fn)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line 804, in _apply
    param_applied = fn(param)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1159, in convert
    return t.to(
  File "/usr/local/lib/python3.11/site-packages/torch/cuda/__init__.py", line 293, in _lazy_init
    torch._C._cuda_init()
RuntimeError: No CUDA GPUs are available
2024-07-09T08:14:10.031Z ERROR entrypoint: worker exited with status 1, backing off 30s (attempt 3/5)
"""), [F("no-cuda-device", 1)])

# ==========================================================================
# 16  torchrun --nproc_per_node=8 on a 4-GPU node: ranks 4-7 -> invalid device ordinal
# ==========================================================================
lines = B("""
W0511 19:40:02.551000 140551093540672 torch/distributed/run.py:757] 
W0511 19:40:02.551000 140551093540672 torch/distributed/run.py:757] *****************************************
W0511 19:40:02.551000 140551093540672 torch/distributed/run.py:757] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. 
W0511 19:40:02.551000 140551093540672 torch/distributed/run.py:757] *****************************************
| distributed init (rank 0): env://, gpu 0
| distributed init (rank 1): env://, gpu 1
| distributed init (rank 3): env://, gpu 3
| distributed init (rank 2): env://, gpu 2
""")
for r in (5, 4, 7, 6):
    lines += [f"[rank{r}]: " + s for s in B(f"""
Traceback (most recent call last):
  File "/home/ml/dino/main_dino.py", line 471, in <module>
    train_dino(args)
  File "/home/ml/dino/utils.py", line 512, in init_distributed_mode
    torch.cuda.set_device(args.gpu)
RuntimeError: CUDA error: invalid device ordinal
""")]
lines += B("""
[rank4]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
[rank4]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
E0511 19:40:09.020000 140551093540672 torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: 1) local_rank: 4 (pid: 30412) of binary: /home/ml/.venv/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
main_dino.py FAILED
------------------------------------------------------------
""")
case("invalid-device-ordinal-multirank", lines, [F("invalid-device-ordinal", 4)])

# ==========================================================================
# 17  device-side assert: embedding index out of range (assertion lines are noise)
# ==========================================================================
lines = B("""
[2024-04-17 21:30:05] INFO vocab size 32000, adding 3 special tokens -> 32003 (embedding NOT resized)
[2024-04-17 21:30:06] INFO epoch 0 step 0 loss 10.37
[2024-04-17 21:30:09] INFO epoch 0 step 20 loss 7.91
""")
for t in (0, 1, 2, 3, 32, 33, 34, 35, 64, 65):
    lines.append(f"../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [183,0,0], thread: [{t},0,0] Assertion `srcIndex < srcSelectDimSize` failed.")
lines += B("""
Traceback (most recent call last):
  File "/srv/lm/train.py", line 203, in <module>
    train()
  File "/srv/lm/train.py", line 151, in train
    out = model(input_ids=batch["input_ids"], labels=batch["labels"])
  File "/srv/lm/.venv/lib/python3.10/site-packages/torch/nn/modules/sparse.py", line 163, in forward
    return F.embedding(
  File "/srv/lm/.venv/lib/python3.10/site-packages/torch/nn/functional.py", line 2237, in embedding
    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)
RuntimeError: CUDA error: device-side assert triggered
""") + CUDA_TAIL
case("device-side-assert-embedding", lines, [F("device-side-assert", 11)])  # the kernel's assertion lines count

# ==========================================================================
# 18  device-side assert, colorlog/rich colours on the failure lines (ANSI)
# ==========================================================================
R, BR, RST, DIM, CY = ESC + "[31m", ESC + "[1;31m", ESC + "[0m", ESC + "[2m", ESC + "[36m"
lines = [
    f"{DIM}2024-08-22 09:14:51{RST} {CY}INFO    {RST} classifier: labels found in train split: 0..11 (12 classes)",
    f"{DIM}2024-08-22 09:14:51{RST} {CY}INFO    {RST} classifier: head configured with num_classes=10",
    f"{DIM}2024-08-22 09:14:53{RST} {CY}INFO    {RST} classifier: epoch 1/20",
]
for t in (7, 19, 23):
    lines.append(f"/opt/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [{t},0,0] Assertion `t >= 0 && t < n_classes` failed.")
lines += [
    f"{DIM}2024-08-22 09:14:54{RST} {BR}ERROR   {RST} classifier: training step failed",
    "Traceback (most recent call last):",
    '  File "/work/cls/train.py", line 97, in step',
    "    loss = F.cross_entropy(logits, y)",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/functional.py", line 3104, in cross_entropy',
    "    return torch._C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction), ignore_index, label_smoothing)",
    f"{BR}RuntimeError{RST}{R}: CUDA error: device-side assert triggered{RST}",
    f"{R}CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.{RST}",
    f"{R}For debugging consider passing CUDA_LAUNCH_BLOCKING=1.{RST}",
    f"{R}Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.{RST}",
    "",
    f"{DIM}2024-08-22 09:14:54{RST} {BR}CRITICAL{RST} classifier: aborting run cls-0822-a (exit 1)",
]
case("device-side-assert-ansi", lines, [F("device-side-assert", 4)])

# ==========================================================================
# 19  illegal memory access in a vLLM server (logged by the engine and re-raised)
# ==========================================================================
E = "ERROR 06-12 10:04:27 async_llm_engine.py:52]"
case("illegal-memory-access-vllm", B(f"""
INFO 06-12 10:01:55 llm_engine.py:161] Initializing an LLM engine (v0.5.0.post1) with config: model='meta-llama/Meta-Llama-3-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Meta-Llama-3-8B-Instruct', dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1, seed=0)
INFO 06-12 10:02:03 model_runner.py:160] Loading model weights took 14.9595 GB
INFO 06-12 10:02:05 gpu_executor.py:83] # GPU blocks: 27928, # CPU blocks: 2048
INFO 06-12 10:02:07 model_runner.py:889] Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.
INFO 06-12 10:02:19 model_runner.py:965] Graph capturing finished in 12 secs.
INFO:     Started server process [1]
INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)
INFO 06-12 10:03:11 metrics.py:341] Avg prompt throughput: 812.4 tokens/s, Avg generation throughput: 1530.2 tokens/s, Running: 31 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 41.3%, CPU KV cache usage: 0.0%.
{E} Engine background task failed
{E} Traceback (most recent call last):
{E}   File "/usr/local/lib/python3.10/dist-packages/vllm/engine/async_llm_engine.py", line 42, in _log_task_completion
{E}     return_value = task.result()
{E}   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py", line 1190, in execute_model
{E}     output = self.model.sample(
{E} RuntimeError: CUDA error: an illegal memory access was encountered
{E} CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
{E} For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Exception in callback functools.partial(<function _log_task_completion at 0x7f2e5c1d3b50>, error_callback=<bound method AsyncLLMEngine._error_callback of <vllm.engine.async_llm_engine.AsyncLLMEngine object at 0x7f2e4a9e1f90>>)
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py", line 1190, in execute_model
    output = self.model.sample(
RuntimeError: CUDA error: an illegal memory access was encountered
""") + CUDA_TAIL + B("""
The above exception was the direct cause of the following exception:

vllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly. This should never happen! Please open an issue on Github. See stack trace above for the actual cause.
INFO:     10.2.0.15:51922 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error
"""), [F("illegal-memory-access", 2)])

# ==========================================================================
# 20  illegal memory access caught by the NCCL watchdog thread (torch 2.2)
# ==========================================================================
case("illegal-memory-access-nccl-watchdog", B("""
[2024-03-27 04:51:10,661] [INFO] [rank1] step 31800 loss=1.7702 grad_norm=0.41 moe_aux=0.0113
[2024-03-27 04:51:14,097] [INFO] [rank1] step 31810 loss=1.7655 grad_norm=0.39 moe_aux=0.0109
[rank1]:[E ProcessGroupNCCL.cpp:1182] [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.

Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f3d8b3a2d87 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x64 (0x7f3d8b35375f in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118 (0x7f3d8b4738a8 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10_cuda.so)
frame #3: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x6c (0x7f3d8c63e3ac in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)
frame #4: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7f3d8c6424c8 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)
frame #5: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x15a (0x7f3d8c645bfa in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)

terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.

[2024-03-27 04:51:17,302] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 118402 closing signal SIGTERM
[2024-03-27 04:51:17,302] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 118404 closing signal SIGTERM
[2024-03-27 04:51:18,911] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) local_rank: 1 (pid: 118403) of binary: /usr/bin/python
  rank      : 1 (local_rank: 1)
  exitcode  : -6 (pid: 118403)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 118403
"""), [F("illegal-memory-access", 2)])

# ==========================================================================
# 21  NCCL "unhandled system error" (socket), torch 2.1
# ==========================================================================
case("nccl-system-error-socket", B("""
gpu-c12:48213:48213 [0] NCCL INFO Bootstrap : Using ens1f0:10.12.0.12<0>
gpu-c12:48213:48213 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
gpu-c12:48213:48213 [0] NCCL INFO cudaDriverVersion 12020
NCCL version 2.18.1+cuda12.1
gpu-c12:48213:48871 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB ens1f0:10.12.0.12<0>
gpu-c12:48213:48871 [0] NCCL INFO Using network IB
gpu-c12:48213:48871 [0] NCCL INFO comm 0x5573c1b06f40 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x9d2be40f6c1a7713 - Init START

gpu-c12:48213:48873 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.12.0.13<40331> failed : Software caused connection abort
gpu-c12:48213:48873 [0] NCCL INFO misc/socket.cc:565 -> 2
gpu-c12:48213:48873 [0] NCCL INFO misc/socket.cc:619 -> 2
gpu-c12:48213:48873 [0] NCCL INFO bootstrap.cc:274 -> 2
gpu-c12:48213:48871 [0] NCCL INFO init.cc:1350 -> 2
gpu-c12:48213:48871 [0] NCCL INFO group.cc:64 -> 2 [Async thread]
gpu-c12:48213:48213 [0] NCCL INFO group.cc:422 -> 2
gpu-c12:48213:48213 [0] NCCL INFO group.cc:106 -> 2
Traceback (most recent call last):
  File "/opt/train/pretrain.py", line 412, in <module>
    main()
  File "/opt/train/pretrain.py", line 318, in main
    model = DDP(model, device_ids=[local_rank])
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/parallel/distributed.py", line 795, in __init__
    _verify_param_shape_across_processes(self.process_group, parameters)
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/utils.py", line 265, in _verify_param_shape_across_processes
    return dist._verify_params_across_processes(process_group, tensors, logger)
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. 
Last error:
socketStartConnect: Connect to 10.12.0.13<40331> failed : Software caused connection abort
"""), [F("nccl-error", 1), F("nccl-system-error", 2, {"nccl_version": "2.18.1"})])  # NCCL's WARN line first

# ==========================================================================
# 22  small /dev/shm in a container: DataLoader bus error, then after the elastic
#     restart NCCL cannot create its shm segment -> unhandled system error
# ==========================================================================
BUS = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."
case("shm-bus-error-then-nccl-system-error", B("""
[2024-05-20 13:02:11,441] train INFO: rank 1 epoch 0 it 400/3125 loss 1.3104
""") + [BUS] + B("""
[rank1]: Traceback (most recent call last):
[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
[rank1]:     data = self._data_queue.get(timeout=timeout)
[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/signal_handling.py", line 67, in handler
[rank1]:     _error_if_any_worker_fails()
[rank1]: RuntimeError: DataLoader worker (pid 31337) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.
[2024-05-20 13:02:13,008] torch.distributed.elastic.agent.server.api: [WARNING] Restarting worker group
[2024-05-20 13:02:13,008] torch.distributed.elastic.agent.server.api: [INFO] [default] Rendezvous complete for workers. Result:
  restart_count=1
  master_addr=127.0.0.1
  world_size=2
d9f1c0a2b7e4:32011:32011 [1] NCCL INFO cudaDriverVersion 12040
NCCL version 2.20.5+cuda12.4
d9f1c0a2b7e4:32011:32190 [1] NCCL INFO P2P is disabled between connected GPUs 0 and 1
d9f1c0a2b7e4:32011:32190 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct

d9f1c0a2b7e4:32011:32190 [1] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-TUSSaJ to 9637892 bytes

d9f1c0a2b7e4:32011:32190 [1] misc/shmutils.cc:113 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-TUSSaJ (size 9637888)
d9f1c0a2b7e4:32011:32190 [1] NCCL INFO misc/shmutils.cc:113 -> 2
d9f1c0a2b7e4:32011:32190 [1] NCCL INFO transport/shm.cc:114 -> 2
d9f1c0a2b7e4:32011:32190 [1] NCCL INFO transport.cc:33 -> 2
[rank1]: Traceback (most recent call last):
[rank1]:   File "/workspace/train.py", line 77, in <module>
[rank1]:     model = DDP(model, device_ids=[rank])
[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. 
[rank1]: Last error:
[rank1]: Error: failed to extend /dev/shm/nccl-TUSSaJ to 9637892 bytes
Bus error (core dumped)
"""), [F("shm-bus-error", 2), F("nccl-error", 2), F("nccl-system-error", 2, {"nccl_version": "2.20.5"})])

# ==========================================================================
# 23  DataLoader bus error on two workers (docker default 64 MB /dev/shm)
# ==========================================================================
case("shm-bus-error-workers", B("""
$ docker run --gpus all --rm -v /data:/data seg:latest python train_seg.py --workers 8 --batch 16
[seg] 2024-02-14 17:20:01 dataset: cityscapes train=2975 val=500 crop=1024x1024
[seg] 2024-02-14 17:20:03 model: deeplabv3plus_r101 (59.3M params) on cuda:0
Epoch 1/80:   0%|          | 0/186 [00:00<?, ?it/s]
""") + [BUS, BUS] + B("""
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/opt/conda/lib/python3.10/multiprocessing/queues.py", line 113, in get
    if not self._poll(timeout):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/_utils/signal_handling.py", line 67, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 204) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/workspace/train_seg.py", line 142, in <module>
    for images, masks in tqdm(train_loader, desc=f"Epoch {epoch}/{epochs}"):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1146, in _try_get_data
    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e
RuntimeError: DataLoader worker (pid(s) 204, 207) exited unexpectedly
"""), [F("shm-bus-error", 3)])

# ==========================================================================
# 24  cuDNN: CUDNN_STATUS_NOT_SUPPORTED (status followed by a period)
# ==========================================================================
case("cudnn-not-supported", B("""
2023-11-06 10:44:19 INFO  asr.train: using cudnn.benchmark=True, channels_last=True
2023-11-06 10:44:21 INFO  asr.train: conformer-L 118.8M params, SpecAugment on
2023-11-06 10:44:25 INFO  asr.train: batch 0: 32 utts, max frames 3311
2023-11-06 10:44:29 INFO  asr.train: batch 1: 32 utts, max frames 8870
Traceback (most recent call last):
  File "/home/asr/train.py", line 318, in <module>
    trainer.run()
  File "/home/asr/trainer.py", line 201, in run
    enc = self.model.encoder(feats, lens)
  File "/home/asr/models/subsampling.py", line 64, in forward
    x = self.conv(x.unsqueeze(1))
  File "/usr/local/lib/python3.9/site-packages/torch/nn/modules/conv.py", line 459, in _conv_forward
    return F.conv2d(input, weight, bias, self.stride,
RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.
2023-11-06 10:44:30 INFO  asr.train: wrote crash report to /home/asr/runs/crash-20231106-104430.txt
"""), [F("cudnn-error", 1, {"status": "CUDNN_STATUS_NOT_SUPPORTED"})])

# ==========================================================================
# 25  cuDNN: CUDNN_STATUS_INTERNAL_ERROR, Windows, CRLF (status at end of line)
# ==========================================================================
case("cudnn-internal-error-windows-crlf", B(r"""
PS D:\work\unet> python .\train.py --amp
Using device: cuda (NVIDIA GeForce RTX 3060 Laptop GPU)
Network: 3 input channels, 2 output channels, bilinear upscaling
Starting training: epochs 5, batch size 4, learning rate 1e-05, images scaling 0.5, mixed precision True
Epoch 1/5:   0%|          | 0/1018 [00:00<?, ?img/s]
Traceback (most recent call last):
  File "D:\work\unet\train.py", line 231, in <module>
    train_model(
  File "D:\work\unet\train.py", line 103, in train_model
    masks_pred = model(images)
  File "D:\work\unet\.venv\lib\site-packages\torch\nn\modules\module.py", line 1501, in _call_impl
    return forward_call(*args, **kwargs)
  File "D:\work\unet\unet\unet_parts.py", line 25, in forward
    return self.double_conv(x)
  File "D:\work\unet\.venv\lib\site-packages\torch\nn\modules\conv.py", line 459, in _conv_forward
    return F.conv2d(input, weight, bias, self.stride,
RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR
Epoch 1/5:   0%|          | 0/1018 [00:03<?, ?img/s]
PS D:\work\unet>
"""), [F("cudnn-error", 1, {"status": "CUDNN_STATUS_INTERNAL_ERROR"})], eol="\r\n")

# ==========================================================================
# 26  cuDNN: CUDNN_STATUS_EXECUTION_FAILED in backward (torch 1.x)
# ==========================================================================
case("cudnn-execution-failed", B("""
[03/14 08:12:40 d2.engine.train_loop]: Starting training from iteration 0
[03/14 08:13:02 d2.utils.events]:  eta: 13:02:11  iter: 19  total_loss: 2.944  loss_cls: 1.102  loss_box_reg: 0.412  lr: 0.00039962  max_mem: 9311M
[03/14 08:13:24 d2.utils.events]:  eta: 12:58:40  iter: 39  total_loss: 2.310  loss_cls: 0.813  loss_box_reg: 0.508  lr: 0.00079922  max_mem: 9311M
ERROR [03/14 08:13:31 d2.engine.train_loop]: Exception during training:
Traceback (most recent call last):
  File "/detectron2/detectron2/engine/train_loop.py", line 149, in train
    self.run_step()
  File "/detectron2/detectron2/engine/train_loop.py", line 395, in run_step
    self.grad_scaler.scale(losses).backward()
  File "/usr/local/lib/python3.8/dist-packages/torch/_tensor.py", line 396, in backward
    torch.autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)
  File "/usr/local/lib/python3.8/dist-packages/torch/autograd/__init__.py", line 173, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED
[03/14 08:13:31 d2.engine.hooks]: Overall training speed: 40 iterations in 0:00:32 (0.8012 s / it)
[03/14 08:13:31 d2.engine.hooks]: Total training time: 0:00:35 (0:00:02 on hooks)
"""), [F("cudnn-error", 1, {"status": "CUDNN_STATUS_EXECUTION_FAILED"})])

# ==========================================================================
# 27  cuBLAS: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)
# ==========================================================================
case("cublas-alloc-failed", B("""
[W 2024-01-09 15:30:12 notebook] GPU 0 is shared: 2 other compute processes found by nvidia-smi
[I 2024-01-09 15:30:14 nb] model loaded: bert-large-uncased (fp32) on cuda:0
[I 2024-01-09 15:30:14 nb] tokenizing 18,211 documents
100%|██████████| 18211/18211 [00:06<00:00, 2781.40it/s]
Traceback (most recent call last):
  File "/home/lab/notebooks/embed.py", line 41, in <module>
    out = model(**enc)
  File "/home/lab/.conda/envs/nlp/lib/python3.9/site-packages/transformers/models/bert/modeling_bert.py", line 1018, in forward
    embedding_output = self.embeddings(
  File "/home/lab/.conda/envs/nlp/lib/python3.9/site-packages/transformers/models/bert/modeling_bert.py", line 245, in forward
    query_layer = self.transpose_for_scores(self.query(hidden_states))
  File "/home/lab/.conda/envs/nlp/lib/python3.9/site-packages/torch/nn/modules/linear.py", line 114, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`
[I 2024-01-09 15:30:22 nb] kernel idle
"""), [F("cuda-error-oom", 1)])  # an allocation that failed: the GPU was full (issue 36's families)

# ==========================================================================
# 28  cuBLAS: CUBLAS_STATUS_EXECUTION_FAILED in cublasSgemm (kernel assertion noise first)
# ==========================================================================
lines = B("""
2022-10-03 23:40:11 | INFO | seq2seq | loaded 1,204,331 pairs, src vocab 48000, tgt vocab 48000
2022-10-03 23:40:15 | INFO | seq2seq | step 0 | loss 10.78
""")
for t in (96, 97, 98, 99):
    lines.append(f"/opt/conda/conda-bld/pytorch_1659484809662/work/aten/src/ATen/native/cuda/Indexing.cu:975: indexSelectLargeIndex: block: [417,0,0], thread: [{t},0,0] Assertion `srcIndex < srcSelectDimSize` failed.")
lines += B("""
Traceback (most recent call last):
  File "train.py", line 266, in <module>
    main()
  File "train.py", line 219, in main
    logits = model(src, tgt_in)
  File "/opt/conda/lib/python3.8/site-packages/torch/nn/modules/transformer.py", line 146, in forward
    memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask)
  File "/opt/conda/lib/python3.8/site-packages/torch/nn/functional.py", line 5026, in multi_head_attention_forward
    q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
  File "/opt/conda/lib/python3.8/site-packages/torch/nn/functional.py", line 4761, in _in_projection_packed
    return linear(q, w, b).chunk(3, dim=-1)
RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`
""")
case("cublas-execution-failed-sgemm", lines,  # the kernel's assertions come first: the root cause
     [F("device-side-assert", 4), F("cublas-error", 1, {"status": "CUBLAS_STATUS_EXECUTION_FAILED", "call": "cublasSgemm"})])

# ==========================================================================
# 29  cuBLAS: CUBLAS_STATUS_NOT_INITIALIZED, Windows, CRLF
# ==========================================================================
case("cublas-not-initialized-windows-crlf", B(r"""
C:\sd\webui>call webui.bat --xformers
venv "C:\sd\webui\venv\Scripts\Python.exe"
Python 3.10.11 (tags/v3.10.11:7d4cc5a, Apr  5 2023, 00:38:17) [MSC v.1929 64 bit (AMD64)]
Launching Web UI with arguments: --xformers
Loading weights [6ce0161689] from C:\sd\webui\models\Stable-diffusion\v1-5-pruned-emaonly.safetensors
Creating model from config: C:\sd\webui\configs\v1-inference.yaml
Applying attention optimization: xformers... done.
Model loaded in 6.2s (load weights from disk: 0.8s, create model: 0.6s, apply weights to model: 4.1s).
Running on local URL:  http://127.0.0.1:7860
  0%|                                                                                           | 0/20 [00:00<?, ?it/s]
*** Error completing request
    Traceback (most recent call last):
      File "C:\sd\webui\modules\call_queue.py", line 57, in f
        res = list(func(*args, **kwargs))
      File "C:\sd\webui\venv\lib\site-packages\torch\nn\modules\linear.py", line 114, in forward
        return F.linear(input, self.weight, self.bias)
    RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`

---
"""), [F("cublas-error", 1, {"status": "CUBLAS_STATUS_NOT_INITIALIZED", "call": "cublasCreate"})],
     eol="\r\n")

# ==========================================================================
# 30  cuBLAS: CUBLAS_STATUS_INVALID_VALUE in cublasGemmEx (fp16)
# ==========================================================================
case("cublas-invalid-value-gemmex", B("""
I0719 12:00:31.552 lora.py:88] base model: llama-2-13b (fp16), lora r=64 alpha=16 targets=q_proj,v_proj
I0719 12:00:31.553 lora.py:91] trainable params: 52,428,800 || all params: 13,068,293,120 || trainable%: 0.4012
I0719 12:00:44.120 lora.py:140] step 0 micro 0 seq 4096
Traceback (most recent call last):
  File "/mnt/code/lora.py", line 212, in <module>
    fire.Fire(train)
  File "/mnt/code/lora.py", line 163, in train
    loss = model(**batch).loss
  File "/mnt/code/.venv/lib/python3.10/site-packages/peft/tuners/lora/layer.py", line 497, in forward
    result = self.base_layer(x, *args, **kwargs)
  File "/mnt/code/.venv/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 116, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`
"""), [F("cublas-error", 1, {"status": "CUBLAS_STATUS_INVALID_VALUE", "call": "cublasGemmEx"})])

# ==========================================================================
# 31  tensors on different devices, newer message with the argument name
# ==========================================================================
case("tensors-on-different-devices", B("""
Some weights of the model checkpoint at roberta-base were not used when initializing RobertaForSequenceClassification: ['lm_head.dense.weight', 'lm_head.bias']
- This IS expected if you are initializing RobertaForSequenceClassification from the checkpoint of a model trained on another task or with another architecture.
Some weights of RobertaForSequenceClassification were not initialized from the model checkpoint at roberta-base and are newly initialized: ['classifier.dense.bias', 'classifier.out_proj.weight']
You should probably TRAIN this model on a down-stream task to be able to use it for predictions and inference.
epoch 0:   0%|          | 0/782 [00:00<?, ?it/s]
Traceback (most recent call last):
  File "/home/jo/sentiment/train.py", line 88, in <module>
    logits = head(pooled)
  File "/home/jo/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1532, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/home/jo/.venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 116, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)
epoch 0:   0%|          | 0/782 [00:01<?, ?it/s]
"""), [F("tensors-on-different-devices", 1, {"devices": "cuda:0,cpu", "argument": "mat1"})])

# ==========================================================================
# 32  tensors on different devices, two GPUs, no "(when checking ...)" suffix
# ==========================================================================
case("tensors-on-different-devices-pipeline", B("""
[pp] stage 0 -> cuda:0 (layers 0-19), stage 1 -> cuda:1 (layers 20-39)
[pp] microbatches=8 chunk=1
[pp] warmup forward ok on stage 0
Traceback (most recent call last):
  File "/opt/pp/run.py", line 57, in <module>
    out = pipe(x)
  File "/opt/pp/pipe.py", line 112, in forward
    h = stage(h)
  File "/opt/pp/blocks.py", line 40, in forward
    hidden = hidden + residual
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!
[pp] shutting down 2 stages
"""), [F("tensors-on-different-devices", 1, {"devices": "cuda:1,cuda:0"})])

# ==========================================================================
# 33  node health bundle: job died (NCCL "unhandled cuda error" is NOT a system
#     error), dmesg shows Xid 79, then nothing sees the GPU any more
# ==========================================================================
case("xid79-then-no-cuda-device", B("""
===== tail of slurm-88123.out (job train-llm, node gpu-a17) =====
[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
[rank3]: ncclUnhandledCudaError: Call to CUDA function failed.
[rank3]: Last error:
[rank3]: Cuda failure 'unspecified launch failure'
srun: error: gpu-a17: task 3: Exited with exit code 1
===== dmesg -T | grep -i nvrm =====
[Sat Aug  3 02:41:17 2024] NVRM: GPU at PCI:0000:18:00: GPU-5b8f2c11-7d3e-9a40-1c6b-0e2f4d8a9b73
[Sat Aug  3 02:41:17 2024] NVRM: GPU Board Serial Number: 1652223034411
[Sat Aug  3 02:41:17 2024] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[Sat Aug  3 02:41:17 2024] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.
[Sat Aug  3 02:41:17 2024] NVRM: A GPU crash dump has been created. If possible, please run
                           NVRM: nvidia-bug-report.sh as root to collect this data before
                           NVRM: the NVIDIA kernel module is unloaded.
===== nvidia-smi =====
Unable to determine the device handle for GPU0000:18:00.0: Unknown Error
===== nccl-tests (CUDA_VISIBLE_DEVICES=3) =====
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
gpu-a17: Test CUDA failure common.cu:891 'no CUDA-capable device is detected'
 .. gpu-a17 pid 55120: Test failure common.cu:844
===== python -c 'import torch; torch.zeros(1, device="cuda")' (CUDA_VISIBLE_DEVICES=3) =====
Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 314, in _lazy_init
    torch._C._cuda_init()
RuntimeError: No CUDA GPUs are available
===== verdict: drain gpu-a17 =====
"""), [F("nccl-error", 2), F("cuda-launch-failure", 1), F("xid", 1, {"code": 79, "pci": "0000:18:00"}),
       F("gpu-lost", 1), F("no-cuda-device", 2)])  # Xid 79 is the root cause of all of them

# ==========================================================================
# 34  dmesg with several Xid codes: 13 (three lines), 43, 31 (another GPU), 45
# ==========================================================================
case("xid-mixed-dmesg", B("""
[ 8811.204113] audit: type=1400 audit(1718345501.902:311): apparmor="DENIED" operation="open" profile="snap.code.code" name="/proc/pressure/memory" pid=4410 comm="code" requested_mask="r" denied_mask="r" fsuid=1000 ouid=0
[ 9120.551002] NVRM: Xid (PCI:0000:3b:00): 13, pid=23456, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address
[ 9120.551019] NVRM: Xid (PCI:0000:3b:00): 13, pid=23456, name=python3, Graphics SM Global Exception on (GPC 1, TPC 3, SM 0): Multiple Warp Errors
[ 9120.551034] NVRM: Xid (PCI:0000:3b:00): 13, pid=23456, name=python3, Graphics Exception: ESR 0x50e648=0x102000e 0x50e650=0x20 0x50e644=0xd3eff2 0x50e64c=0x17f
[ 9120.553870] NVRM: Xid (PCI:0000:3b:00): 43, pid=23456, name=python3, Ch 00000008
[ 9131.002214] nvidia-uvm: uvm encountered a fatal error; see kernel log
[ 9702.118450] NVRM: Xid (PCI:0000:86:00): 31, pid=24102, name=python3, Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_2 faulted @ 0x7f5c_9a000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ
[ 9702.130091] NVRM: Xid (PCI:0000:3b:00): 45, pid=23456, name=python3, Ch 00000008
[ 9702.130120] NVRM: Xid (PCI:0000:3b:00): 45, pid=23456, name=python3, Ch 00000009
[ 9750.401774] perf: interrupt took too long (2510 > 2500), lowering kernel.perf_event_max_sample_rate to 79500
[10112.006318] EXT4-fs (nvme0n1p2): re-mounted. Opts: (null). Quota mode: none.
[10480.771120] docker0: port 2(veth4c1a2e0) entered disabled state
"""), [F("xid", 3, {"code": 13, "pci": "0000:3b:00"}), F("xid", 1, {"code": 43, "pci": "0000:3b:00"}),
       F("xid", 1, {"code": 31, "pci": "0000:86:00"}), F("xid", 2, {"code": 45, "pci": "0000:3b:00"})])

# ==========================================================================
# 35  syslog: uncorrectable ECC on an A100 -> Xid 48, 63, 94; the application's
#     "uncorrectable ECC error encountered" is not a signature of its own
# ==========================================================================
K = "Oct 24 03:14:07 gpu-node-22 kernel:"
case("xid-ecc-syslog", B(f"""
Oct 24 03:13:58 gpu-node-22 slurmd[2201]: launch task StepId=990112.0 request from UID:1044 GID:1044 HOST:10.3.0.1 PORT:40118
Oct 24 03:13:59 gpu-node-22 systemd[1]: Started Session 4412 of User mlops.
{K} [430954.509105] NVRM: Xid (PCI:0000:65:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x3a7c11e80 partition 9, subpartition 1.
{K} [430954.532443] NVRM: Xid (PCI:0000:65:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x00000003a7c11e80) marked for remapping, reset gpu to activate.
{K} [430954.533994] NVRM: Xid (PCI:0000:65:00): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No
Oct 24 03:14:08 gpu-node-22 slurmstepd[88810]: [990112.0] task 2: python3: RuntimeError: CUDA error: uncorrectable ECC error encountered
Oct 24 03:14:09 gpu-node-22 slurmstepd[88810]: [990112.0] done with job
Oct 24 03:14:11 gpu-node-22 nv-hostengine[1780]: DCGM: GPU 2 health watch: memory subsystem failure
Oct 24 03:15:01 gpu-node-22 CRON[90012]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)
Oct 24 03:16:40 gpu-node-22 slurmd[2201]: error: health check failed: rc:1 output:gpu 2 remapped rows pending
"""), [F("xid", 1, {"code": 48, "pci": "0000:65:00"}), F("xid", 1, {"code": 63, "pci": "0000:65:00"}),
       F("xid", 1, {"code": 94, "pci": "0000:65:00"}), F("ecc-error", 1)])

# ==========================================================================
# 36  GSP firmware stops answering: Xid 119 (three lines) then Xid 154
# ==========================================================================
case("xid-gsp-timeout", B("""
[Thu Jul 18 02:14:39 2024] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 24 LTSSM Fault Up
[Thu Jul 18 02:14:51 2024] NVRM: Xid (PCI:0000:9b:00): 119, pid=771203, name=python3, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).
[Thu Jul 18 02:14:51 2024] NVRM: GPU4 GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x0000000020800a4c 0x0000000000000004.
[Thu Jul 18 02:14:57 2024] NVRM: Xid (PCI:0000:9b:00): 119, pid=771203, name=python3, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 10 (FREE) (0xa55a0050 0x0).
[Thu Jul 18 02:15:03 2024] NVRM: Xid (PCI:0000:9b:00): 119, pid=9921, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).
[Thu Jul 18 02:15:03 2024] NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every 30).  The GPU likely needs to be reset.
[Thu Jul 18 02:15:09 2024] NVRM: Xid (PCI:0000:9b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)
[Thu Jul 18 02:17:11 2024] INFO: task nvidia-smi:9921 blocked for more than 120 seconds.
[Thu Jul 18 02:17:11 2024]       Tainted: P           OE      5.15.0-105-generic #115-Ubuntu
[Thu Jul 18 02:17:11 2024] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
[Thu Jul 18 02:17:11 2024] task:nvidia-smi      state:D stack:    0 pid: 9921 ppid:  9874 flags:0x00004002
[Thu Jul 18 02:17:11 2024] Call Trace:
[Thu Jul 18 02:17:11 2024]  <TASK>
[Thu Jul 18 02:17:11 2024]  __schedule+0x24e/0x590
"""), [F("xid", 3, {"code": 119, "pci": "0000:9b:00"}), F("xid", 1, {"code": 154, "pci": "0000:9b:00"})])

# ==========================================================================
# 37  NCCL watchdog timeout (torch 2.3) first, the epilog's dmesg shows Xid 74 (NVLink)
# ==========================================================================
lines = B("""
[2024-11-05 07:20:14,882] trainer INFO: iter 120400 | lm loss 1.9021 | grad norm 0.31 | 182.4 TFLOP/s/GPU
[2024-11-05 07:20:18,907] trainer INFO: iter 120410 | lm loss 1.8977 | grad norm 0.30 | 182.6 TFLOP/s/GPU
""")
for r, ran in ((2, 600031), (6, 600034)):
    w = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=361207, "
         f"OpType=REDUCE_SCATTER, NumelIn=134217728, NumelOut=16777216, Timeout(ms)=600000) ran for "
         f"{ran} milliseconds before timing out.")
    lines += [
        f"[rank{r}]:[E1105 07:30:19.114{r}02881 ProcessGroupNCCL.cpp:563] {w}",
        f"[rank{r}]:[E1105 07:30:19.114{r}09113 ProcessGroupNCCL.cpp:1537] [PG 0 Rank {r}] Timeout at NCCL work: 361207, last enqueued NCCL work: 361208, last completed NCCL work: 361206.",
        f"[rank{r}]:[E1105 07:30:19.114{r}12201 ProcessGroupNCCL.cpp:577] [Rank {r}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"[rank{r}]:[E1105 07:30:19.114{r}15077 ProcessGroupNCCL.cpp:583] [Rank {r}] To avoid data inconsistency, we are taking the entire process down.",
    ]
lines += B("""
srun: error: gpu-h114: tasks 2,6: Aborted (core dumped)
===== epilog: dmesg -T | grep NVRM (gpu-h114) =====
[Tue Nov  5 07:20:21 2024] NVRM: GPU at PCI:0000:ca:00: GPU-9e21b7d4-3c0a-51f8-a2e6-7b14c0d93f25
[Tue Nov  5 07:20:21 2024] NVRM: GPU Board Serial Number: 1654123087722
[Tue Nov  5 07:20:21 2024] NVRM: Xid (PCI:0000:ca:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 4(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)
[Tue Nov  5 07:20:21 2024] NVRM: Xid (PCI:0000:ca:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 5(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)
===== epilog: node gpu-h114 set to DRAIN (reason: xid) =====
""")
case("nccl-watchdog-then-xid74", lines,
     [F("nccl-watchdog-timeout", 4, {"seq": 361207, "op": "REDUCE_SCATTER", "timeout_ms": 600000}),
      F("xid", 2, {"code": 74, "pci": "0000:ca:00"})])

# ==========================================================================
# 38  OOM through rich's RichHandler: numbers highlighted with ANSI inside the message;
#     another process on the GPU, but smaller than the request -> fragmentation
# ==========================================================================
m, v = oom_new("1.50 GiB", 0, "23.68 GiB", "1.55 GiB", [(3001, "1.20 GiB")], "20.91 GiB",
               "18.87 GiB", "1.88 GiB", exc="torch.OutOfMemoryError")
assert v["verdict"] == "fragmentation"
NUM = ESC + "[1;36m"
hl = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])", lambda g: NUM + g.group(1) + RST, m)
hl = hl.replace("torch.OutOfMemoryError:", ESC + "[1;31mtorch.OutOfMemoryError:" + RST, 1)
assert re.sub(r"\x1b\[[0-9;]*m", "", hl) == m and "Tried to allocate 1.50 GiB" not in hl
T = ESC + "[2;36m"
lines = [
    f"{T}[11/19/24 16:02:10]{RST} {ESC}[34mINFO    {RST} Loaded checkpoint {ESC}[32m'ckpt/sd3-medium.safetensors'{RST}          {ESC}[2mapp.py{RST}{ESC}[2m:{RST}{ESC}[2m88{RST}",
    f"{T}                    {RST} {ESC}[34mINFO    {RST} Warmup render {NUM}512{RST}x{NUM}512{RST} took {NUM}2.31{RST}s           {ESC}[2mapp.py{RST}{ESC}[2m:{RST}{ESC}[2m97{RST}",
    f"{T}[11/19/24 16:02:41]{RST} {ESC}[34mINFO    {RST} Job {NUM}7731{RST}: {NUM}1536{RST}x{NUM}1536{RST}, {NUM}28{RST} steps, cfg {NUM}7.0{RST}    {ESC}[2mapp.py{RST}{ESC}[2m:{RST}{ESC}[2m120{RST}",
    f"{T}[11/19/24 16:02:49]{RST} {ESC}[31mERROR   {RST} Job {NUM}7731{RST} failed                             {ESC}[2mapp.py{RST}{ESC}[2m:{RST}{ESC}[2m131{RST}",
    "Traceback (most recent call last):",
    '  File "/srv/render/app.py", line 126, in run_job',
    "    img = pipe(prompt, height=h, width=w, num_inference_steps=steps).images[0]",
    '  File "/srv/render/.venv/lib/python3.12/site-packages/diffusers/models/attention_processor.py", line 1820, in __call__',
    "    hidden_states = F.scaled_dot_product_attention(query, key, value, dropout_p=0.0, is_causal=False)",
    hl,
    f"{T}[11/19/24 16:02:49]{RST} {ESC}[34mINFO    {RST} torch.cuda.empty_cache() done, queue length {NUM}3{RST}  {ESC}[2mapp.py{RST}{ESC}[2m:{RST}{ESC}[2m140{RST}",
    f"{T}[11/19/24 16:02:50]{RST} {ESC}[34mINFO    {RST} Job {NUM}7732{RST}: {NUM}1024{RST}x{NUM}1024{RST}, {NUM}28{RST} steps, cfg {NUM}7.0{RST}    {ESC}[2mapp.py{RST}{ESC}[2m:{RST}{ESC}[2m120{RST}",
]
case("oom-ansi-rich", lines, [F("pytorch-oom", 1, v)])

# ==========================================================================
# 39  multi-node Slurm: one rank OOMs on node 2, ranks on node 1 then hit the
#     NCCL watchdog timeout 30 minutes later
# ==========================================================================
m, v = oom_new("7.81 GiB", 1, "79.11 GiB", "5.96 GiB", [(41022, "73.14 GiB")], None, "70.02 GiB",
               "2.51 GiB", exc="torch.OutOfMemoryError")
assert v["verdict"] == "too-big"
lines = B("""
0: [2024-10-02 01:00:03,118] [INFO] [launch] nnodes=2 nproc_per_node=4 world_size=8 master=node-17:29500
0: [2024-10-02 01:12:40,551] [INFO] [train] step 1500 loss 2.6640 seq 8192 mfu 0.412
0: [2024-10-02 01:13:21,204] [INFO] [train] step 1510 loss 2.6611 seq 8192 mfu 0.413
0: [2024-10-02 01:13:22,015] [INFO] [train] switching to seq 16384 (curriculum stage 2)
5: [rank5]: Traceback (most recent call last):
5: [rank5]:   File "/lustre/proj/llm/train.py", line 402, in <module>
5: [rank5]:     main(cfg)
5: [rank5]:   File "/lustre/proj/llm/model/attention.py", line 88, in forward
5: [rank5]:     scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale
""") + ["5: [rank5]: " + m] + B("""
5: W1002 01:13:25.004000 22905 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 41021 closing signal SIGTERM
5: E1002 01:13:26.417000 22905 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 1 (pid: 41022) of binary: /lustre/proj/llm/.venv/bin/python
srun: error: node-18: task 1: Exited with exit code 1
""")
for r, ran in ((0, 1800107), (2, 1800109), (1, 1800112), (3, 1800118)):
    w = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=91207, "
         f"OpType=ALLREDUCE, NumelIn=268435456, NumelOut=268435456, Timeout(ms)=1800000) ran for "
         f"{ran} milliseconds before timing out.")
    lines.append(f"0: [rank{r}]:[E1002 01:43:22.9{r}1887012 ProcessGroupNCCL.cpp:616] {w}")
    if r in (0, 2):
        lines.append("0: terminate called after throwing an instance of 'c10::DistBackendError'")
        lines.append(f"0:   what():  [PG 0 (default_pg) Rank {r}] Process group watchdog thread terminated with exception: {w}")
lines += B("""
srun: error: node-17: tasks 0-3: Aborted (core dumped)
srun: Job step aborted: Waiting up to 32 seconds for job step to finish.
""")
case("oom-then-nccl-watchdog-multinode", lines,
     [F("pytorch-oom", 1, v),
      F("nccl-watchdog-timeout", 6, {"seq": 91207, "op": "ALLREDUCE", "timeout_ms": 1800000})])

# ==========================================================================
# 40-43  nothing matches
# ==========================================================================
case("clean-training", B("""
2024-06-01 08:00:00,001 INFO  launcher: job 5521 on dgx-b03, 8x NVIDIA H100 80GB HBM3, driver 550.54.15
2024-06-01 08:00:04,412 INFO  train: config: model=gpt-1.3b seq=2048 global_batch=512 lr=2e-4 warmup=2000
2024-06-01 08:00:09,880 INFO  train: resumed from step 0 (fresh run)
Epoch 1:   0%|          | 0/9765 [00:00<?, ?it/s]
Epoch 1:  10%|█         | 977/9765 [08:11<1:13:40,  1.99it/s, loss=3.412]
Epoch 1:  20%|██        | 1953/9765 [16:22<1:05:29,  1.99it/s, loss=3.015]
Epoch 1:  30%|███       | 2930/9765 [24:33<57:18,  1.99it/s, loss=2.877]Epoch 1:  30%|███       | 2931/9765 [24:34<57:17,  1.99it/s, loss=2.877]
2024-06-01 08:25:10,004 INFO  train: step 3000 loss 2.8702 ppl 17.64 tokens/s 1.04M
2024-06-01 08:25:40,311 INFO  train: saved checkpoint /ckpt/5521/step_3000 (2.61 GB) in 4.1s
Epoch 1:  40%|████      | 3906/9765 [32:44<49:07,  1.99it/s, loss=2.790]
Epoch 1:  50%|█████     | 4883/9765 [40:55<40:55,  1.99it/s, loss=2.731]
Epoch 1:  60%|██████    | 5859/9765 [49:06<32:44,  1.99it/s, loss=2.688]
2024-06-01 08:50:21,572 INFO  train: step 6000 loss 2.6813 ppl 14.61 tokens/s 1.04M
Epoch 1:  70%|███████   | 6836/9765 [57:17<24:33,  1.99it/s, loss=2.652]
Epoch 1:  80%|████████  | 7812/9765 [1:05:28<16:22,  1.99it/s, loss=2.623]
Epoch 1:  90%|█████████ | 8789/9765 [1:13:39<08:11,  1.99it/s, loss=2.601]
Epoch 1: 100%|██████████| 9765/9765 [1:21:50<00:00,  1.99it/s, loss=2.584]
2024-06-01 09:21:59,940 INFO  train: eval loss 2.5933 ppl 13.37
2024-06-01 09:22:06,118 INFO  train: saved final checkpoint /ckpt/5521/final (2.61 GB)
2024-06-01 09:22:06,120 INFO  launcher: job 5521 finished, exit code 0
"""), [])
# (line 7 above holds a tqdm carriage return inside one line, as tqdm writes to a file)
CASES[-1]["lines"][6] = CASES[-1]["lines"][6].replace("Epoch 1:  30%|███       | 2931", "\rEpoch 1:  30%|███       | 2931")

case("harmless-cuda-memory-info", B("""
[2024-07-11 10:00:01,002] [INFO] [env.py:33] CUDA available: True, device count: 8, CUDA version: 12.4, cuDNN version: 90100
[2024-07-11 10:00:01,003] [INFO] [env.py:36] PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (avoids fragmentation of the caching allocator)
[2024-07-11 10:00:01,004] [INFO] [env.py:40] torch.cuda.mem_get_info(0): free=79.02 GiB total=79.15 GiB
dgx-b03:9921:9921 [0] NCCL INFO Bootstrap : Using ibp12s0:10.50.3.3<0>
dgx-b03:9921:9921 [0] NCCL INFO cudaDriverVersion 12040
NCCL version 2.21.5+cuda12.4
dgx-b03:9921:10412 [0] NCCL INFO comm 0x5601f3e0c8a0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x51c07a9e3d21f4b6 - Init COMPLETE
dgx-b03:9921:10412 [0] NCCL INFO Allocated 4194656 bytes of shared memory in /dev/shm/nccl-6aq1xd
[2024-07-11 10:00:14,550] [INFO] [utils.py:800:see_memory_usage] Before initializing optimizer states
[2024-07-11 10:00:14,551] [INFO] [utils.py:801:see_memory_usage] MA 12.58 GB         Max_MA 12.58 GB         CA 12.6 GB         Max_CA 13 GB 
[2024-07-11 10:00:14,551] [INFO] [utils.py:808:see_memory_usage] CPU Virtual Memory:  used = 61.2 GB, percent = 3.0%
[2024-07-11 10:00:15,002] [INFO] [train.py:92] CUDA graphs: enabled for the decode step; device-side assertions: off (set TORCH_USE_CUDA_DSA to enable)
[2024-07-11 10:00:15,003] [INFO] [train.py:95] shared memory (/dev/shm): 512.0 GiB free; dataloader workers=8 pin_memory=True
[2024-07-11 10:00:15,004] [INFO] [train.py:97] NCCL_DEBUG=INFO NCCL_TIMEOUT=1800 NCCL_ASYNC_ERROR_HANDLING=1 (watchdog enabled)
[2024-07-11 10:05:20,771] [INFO] [train.py:140] step 500 loss 2.9013 | peak CUDA memory allocated 61.42 GiB, reserved 63.10 GiB
[2024-07-11 10:10:26,118] [INFO] [train.py:140] step 1000 loss 2.6108 | peak CUDA memory allocated 61.42 GiB, reserved 63.10 GiB
[2024-07-11 10:10:26,119] [INFO] [train.py:150] memory check: no other processes on the GPUs, no Xid events since boot
[2024-07-11 10:10:31,660] [INFO] [train.py:171] done, exiting with status 0
"""), [])

lines = B("""
============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.2.2, pluggy-1.5.0
rootdir: /src/kernels
collected 3 items

tests/test_bounds.py::test_gather_rejects_out_of_range_child
""")
for t in range(6):
    lines.append(f"../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [{t},0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.")
lines += B("""
PASSED
tests/test_bounds.py::test_nll_loss_rejects_bad_label_child
/src/kernels/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.
/src/kernels/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [1,0,0] Assertion `t >= 0 && t < n_classes` failed.
PASSED
tests/test_bounds.py::test_in_range_gather PASSED

============================== 3 passed in 14.02s ==============================
""")
# The kernel's own assertion lines are a device-side assert wherever they appear: in real logs they are
# often the only sign of one (issue 36), so a test harness that expects them is reported too.
case("kernel-asserts-in-passing-tests", lines, [F("device-side-assert", 8)])

case("bus-error-core-dumped-only", B("""
$ docker run --gpus all --rm nccl-tests:2.13 mpirun --allow-run-as-root -np 8 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid     41 on 3c9e1f0a7b2d device  0 [0x18] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid     42 on 3c9e1f0a7b2d device  1 [0x2a] NVIDIA A100-SXM4-80GB
3c9e1f0a7b2d:41:41 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>
3c9e1f0a7b2d:41:41 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
3c9e1f0a7b2d:41:41 [0] NCCL INFO cudaDriverVersion 12020
NCCL version 2.18.3+cuda12.2
3c9e1f0a7b2d:41:77 [0] NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7
3c9e1f0a7b2d:41:77 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read
Bus error (core dumped)
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 0 with PID 0 on node 3c9e1f0a7b2d exited on signal 7 (Bus error).
--------------------------------------------------------------------------
"""), [])

# ==========================================================================
# 44  one-line CUDA OOM (no allocator numbers) on all four ranks of a torchrun
#     job, ranks 0 and 1 interleaved line by line: one finding, four lines
# ==========================================================================
lines = B("""
W0903 17:20:02.441000 139881 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default.
[2024-09-03 17:20:09,118] [INFO] [pretrain.py:48:main] world_size=4 backend=nccl model=resnet200d amp=bf16
[2024-09-03 17:20:09,120] [INFO] [pretrain.py:52:main] another job is on this node: nvidia-smi shows 71.2 GiB used on GPU 0
""")
tb = B("""
Traceback (most recent call last):
  File "/srv/jobs/pretrain.py", line 211, in <module>
    main()
  File "/srv/jobs/pretrain.py", line 63, in main
    model = build_model(cfg).cuda()
  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 911, in cuda
    return self._apply(lambda t: t.cuda(device))
RuntimeError: CUDA error: out of memory
""") + CUDA_TAIL
for a, b in zip(tb, tb):
    lines += [f"[rank0]: {a}", f"[rank1]: {b}"]
for r in (3, 2):
    lines += [f"[rank{r}]: {x}" for x in tb[-4:]]
lines += B("""
E0903 17:20:14.003000 139881 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 0 (pid: 139902) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
""")
case("cuda-error-oom-four-ranks-interleaved", lines, [F("cuda-error-oom", 4)])

# ==========================================================================
# 45  PyTorch 0.4 "cuda runtime error (2) : out of memory", pasted into a
#     GitHub issue: markdown quote markers, bold text, code fences
# ==========================================================================
case("cuda-error-oom-torch04-markdown", B("""
**Describe the bug**
Training crashes after a few iterations on a GTX 1080 Ti (11 GB), batch size 16.

**To Reproduce**
```
python train.py --dataset coco --batch_size 16
```
**Error**
> Traceback (most recent call last):
>   File "train.py", line 142, in <module>
>     loss.backward()
>   File "/home/lab/anaconda3/lib/python3.6/site-packages/torch/tensor.py", line 93, in backward
>     torch.autograd.backward(self, gradient, retain_graph, create_graph)
>   File "/home/lab/anaconda3/lib/python3.6/site-packages/torch/autograd/__init__.py", line 89, in backward
>     allow_unreachable=True)  # allow_unreachable flag
> RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/THCCachingAllocator.cpp:510

**Environment**
 - PyTorch Version: 0.4.1
 - CUDA: 9.0, driver 390.77
"""), [F("cuda-error-oom", 1)])

# ==========================================================================
# 46  a web UI's log copied from a CI viewer with line numbers; the error is
#     glued to the last update of a tqdm bar (CR-separated updates, one line)
# ==========================================================================
bar = "".join(f"\r {p:3d}%|{'█' * (p // 10):<10}| {i}/20 [00:0{i // 4}<00:04,  2.71it/s]"
              for i, p in ((i, i * 5) for i in range(0, 10)))
case("cuda-error-oom-glued-to-tqdm", [f"{n:>4}  {t}" for n, t in enumerate([
    "Launching Web UI with arguments: --listen --xformers",
    "Loading weights [6ce0161689] from /models/Stable-diffusion/v1-5-pruned-emaonly.safetensors",
    "Creating model from config: /app/configs/v1-inference.yaml",
    "Applying attention optimization: xformers... done.",
    "Model loaded in 4.1s (load weights from disk: 0.6s, create model: 0.5s, apply weights to model: 2.7s).",
    "Running on local URL:  http://0.0.0.0:7860",
    "To create a public link, set `share=True` in `launch()`.",
    "*** txt2img: 1536x1536, steps=20, batch=4",
    bar + "ERROR:root:CUDA error: out of memory",
    "*** Error completing request",
    "*** Arguments: ('task(8d2kq1)', 'a red fox in the snow', '', [], 20, 'DPM++ 2M Karras', 4, 1, 7, 1536, 1536) {}",
    "    Traceback (most recent call last):",
    "      File \"/app/modules/call_queue.py\", line 57, in f",
    "        res = list(func(*args, **kwargs))",
    "      File \"/app/modules/processing.py\", line 845, in process_images",
    "        res = process_images_inner(p)",
    "    RuntimeError: CUDA error: out of memory",
], start=101)], [F("cuda-error-oom", 2)])

# ==========================================================================
# 47  a request hundreds of times the GPU: torch 1.4's cuDNN workspace size
#     overflowed (2^64 bytes asked for a half-precision conv) -> size-bug
# ==========================================================================
m, v = oom_old("17179869183.95 GiB", 0, "23.65 GiB", "3.15 GiB", "18.80 GiB", "3.15 GiB", tail="")
assert v["verdict"] == "size-bug"
case("oom-size-bug-overflow", B("""
Python 3.6.9 |Anaconda, Inc.| (default, Jul 30 2019, 19:07:31)
[GCC 7.3.0] on linux
>>> import torch, torchvision
>>> torch.__version__, torch.backends.cudnn.version()
('1.4.0', 7603)
>>> resnet = torchvision.models.resnet18().half().cuda()
>>> x = torch.ones([1, 3, 10210, 8641], dtype=torch.float16, device="cuda")
>>> y = resnet(x)
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/opt/conda/lib/python3.6/site-packages/torch/nn/modules/module.py", line 532, in __call__
    result = self.forward(*input, **kwargs)
  File "/opt/conda/lib/python3.6/site-packages/torchvision/models/resnet.py", line 198, in _forward
    x = self.conv1(x)
  File "/opt/conda/lib/python3.6/site-packages/torch/nn/modules/conv.py", line 342, in conv2d_forward
    self.padding, self.dilation, self.groups)
""") + [m] + B("""
>>> torch.cuda.memory_allocated() / 2**30
3.1528
"""), [F("pytorch-oom", 1, v)])

# ==========================================================================
# 48  attention over a whole sequence materialised at once: 157 times the
#     GPU's memory, from a Slurm job whose lines carry the host name -> size-bug
# ==========================================================================
m, v = oom_new("3725.29 GiB", 0, "23.64 GiB", "14.87 GiB", [], "8.75 GiB", "8.21 GiB",
               "102.53 MiB", exc="torch.OutOfMemoryError")
assert v["verdict"] == "size-bug"
lines = ["gpu-node-12: " + x for x in B("""
[2024-11-02 08:14:55] eval: loading checkpoint runs/longformer-lite/step_40000.pt
[2024-11-02 08:14:58] eval: 1 document(s), max length 1000000 tokens (no chunking: --chunk 0)
Traceback (most recent call last):
  File "/home/ana/lf/eval.py", line 96, in <module>
    scores = model.score(doc_ids)
  File "/home/ana/lf/model.py", line 141, in score
    att = torch.softmax(q @ k.transpose(-1, -2) / self.scale, dim=-1)
""") + [m] + B("""
srun: error: gpu-node-12: task 0: Exited with exit code 1
""")] + B("""
slurmstepd: error: *** JOB 4471230 ON gpu-node-12 CANCELLED AT 2024-11-02T08:15:03 ***
""")
case("oom-size-bug-host-prefix", lines, [F("pytorch-oom", 1, v)])

# ==========================================================================
# 49  driver too old for the PyTorch build: RuntimeError (torch 2.1, cu121)
#     on a driver that goes up to CUDA 11.4
# ==========================================================================
case("cuda-driver-too-old-runtime-error", B("""
(fooocus) lee@desk:~/Fooocus$ nvidia-smi | head -4
Tue Dec 12 21:04:51 2023
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.86       Driver Version: 470.86       CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
(fooocus) lee@desk:~/Fooocus$ python entry_with_update.py
Update succeeded.
[System ARGV] ['entry_with_update.py']
Python 3.10.13 (main, Sep 11 2023, 13:44:35) [GCC 11.2.0]
Fooocus version: 2.1.824
Total VRAM 3904 MB, total RAM 15802 MB
Traceback (most recent call last):
  File "/home/lee/Fooocus/entry_with_update.py", line 46, in <module>
    from launch import *
  File "/home/lee/Fooocus/ldm_patched/modules/model_management.py", line 110, in get_torch_device
    return torch.device(torch.cuda.current_device())
  File "/home/lee/miniconda3/envs/fooocus/lib/python3.10/site-packages/torch/cuda/__init__.py", line 769, in current_device
    _lazy_init()
  File "/home/lee/miniconda3/envs/fooocus/lib/python3.10/site-packages/torch/cuda/__init__.py", line 298, in _lazy_init
    torch._C._cuda_init()
RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver.
"""), [F("cuda-driver-insufficient", 1, {"found_version": 11040, "driver_cuda": "11.4"})])

# ==========================================================================
# 50  the same as a UserWarning: torch.cuda.is_available() is False and the
#     training goes on on the CPU, slowly, with no error at all
# ==========================================================================
case("cuda-driver-too-old-cpu-fallback", B("""
$ python train.py --img 640 --batch 16 --epochs 3 --data coco128.yaml --weights yolov5s.pt
/home/gef/.local/lib/python3.8/site-packages/torch/cuda/__init__.py:52: UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 10010). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver. (Triggered internally at  /pytorch/c10/cuda/CUDAFunctions.cpp:100.)
  return torch._C._cuda_getDeviceCount() > 0
YOLOv5 v4.0-14-gb75c432 torch 1.7.1 CPU

Namespace(adam=False, batch_size=16, bucket='', cache_images=False, cfg='', data='coco128.yaml', device='', epochs=3, img_size=[640, 640], workers=8)
Start Tensorboard with "tensorboard --logdir runs/train", view at http://localhost:6006/
Hyperparameters {'lr0': 0.01, 'lrf': 0.2, 'momentum': 0.937, 'weight_decay': 0.0005, 'warmup_epochs': 3.0}
Transferred 362/362 items from yolov5s.pt
Scaled weight_decay = 0.0005
Optimizer groups: 62 .bias, 62 conv.weight, 59 other
Scanning 'coco128/labels/train2017.cache' for images and labels... 128 found, 0 missing, 2 empty, 0 corrupted
Image sizes 640 train, 640 test
Using 8 dataloader workers
Logging results to runs/train/exp3
Starting training for 3 epochs...

     Epoch   gpu_mem       box       obj       cls     total   targets  img_size
       0/2        0G   0.04235   0.06327   0.02091    0.1265       190       640:  12%|#2        | 1/8 [00:41<04:49, 41.36s/it]
       0/2        0G   0.04369   0.06841   0.02003    0.1321       222       640:  25%|##5       | 2/8 [01:22<04:07, 41.22s/it]
"""), [F("cuda-driver-insufficient-cpu-fallback", 1, {"found_version": 10010, "driver_cuda": "10.1"})])

# ==========================================================================
# 51  PyTorch before 1.0: the same as a multi-line AssertionError, the number
#     on the line after "AssertionError:"
# ==========================================================================
case("cuda-driver-too-old-assertion-pre1.0", B("""
$ python train.py --gpu 0 --arch resnet50
=> creating model 'resnet50'
Traceback (most recent call last):
  File "train.py", line 182, in <module>
    trainer.validation(epoch)
  File "train.py", line 134, in eval_batch
    target = target.cuda()
  File "/home/wz/anaconda3/envs/pytorch04/lib/python3.6/site-packages/torch/cuda/__init__.py", line 161, in _lazy_init
    _check_driver()
  File "/home/wz/anaconda3/envs/pytorch04/lib/python3.6/site-packages/torch/cuda/__init__.py", line 82, in _check_driver
    of the CUDA driver.\"\"\".format(str(torch._C._cuda_getDriverVersion())))
AssertionError:
The NVIDIA driver on your system is too old (found version 9000).
Please update your GPU driver by downloading and installing a new
version from the URL: http://www.nvidia.com/Download/index.aspx
Alternatively, go to: https://pytorch.org to install
a PyTorch version that has been compiled with your version
of the CUDA driver.
"""), [F("cuda-driver-insufficient", 1, {"found_version": 9000, "driver_cuda": "9.0"})])

# ==========================================================================
# 52  a GPU falls off the bus while the driver loads it: the kernel's
#     three-line message, no Xid number (journalctl -k after a reboot)
# ==========================================================================
case("gpu-fallen-off-bus-no-xid", B("""
$ journalctl -k -b | grep -iE 'nvrm|nvidia'
Feb 14 05:03:38 gpu-h07 kernel: nvidia: loading out-of-tree module taints kernel.
Feb 14 05:03:38 gpu-h07 kernel: nvidia-nvlink: Nvlink Core is being initialized, major device number 508
Feb 14 05:03:38 gpu-h07 kernel: nvidia 0000:18:00.0: enabling device (0000 -> 0002)
Feb 14 05:03:39 gpu-h07 kernel: nvidia 0000:b3:00.0: enabling device (0000 -> 0002)
Feb 14 05:03:41 gpu-h07 kernel: NVRM: The NVIDIA GPU 0000:b3:00.0
Feb 14 05:03:41 gpu-h07 kernel: NVRM: (PCI ID: 10de:26b5) installed in this system has
Feb 14 05:03:41 gpu-h07 kernel: NVRM: fallen off the bus and is not responding to commands.
Feb 14 05:03:41 gpu-h07 kernel: NVRM: The NVIDIA probe routine failed for 1 device(s).
Feb 14 05:03:41 gpu-h07 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025
Feb 14 05:03:42 gpu-h07 kernel: nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  570.158.01  Mon Jun  2 12:40:51 UTC 2025
Feb 14 05:03:42 gpu-h07 kernel: [drm] [nvidia-drm] [GPU ID 0x00001800] Loading driver
$ nvidia-smi -L
GPU 0: NVIDIA L40S (UUID: GPU-3f1d2a0b-9c47-4e55-8a1e-7b2c90d4e611)
"""), [F("gpu-fallen-off-bus", 1, {"pci": "0000:b3:00.0"})])

# ==========================================================================
# 53  DataParallel in a container (torch 1.x): "NCCL Error 2: unhandled
#     system error" from torch.cuda.nccl, pasted with backticks
# ==========================================================================
case("nccl-error-2-dataparallel", B("""
I run the demo with two GPUs inside docker and it always fails at the first forward pass:
```
$ CUDA_VISIBLE_DEVICES=0,1 python -u -m romp.predict.image --configs_yml='configs/image.yml'
Loading model from trained_models/ROMP.pkl
Using 2 GPUs for inference (nn.DataParallel)
Traceback (most recent call last):
  File "/opt/conda/lib/python3.8/runpy.py", line 194, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/workspace/ROMP/romp/predict/image.py", line 77, in run
    outputs = self.net_forward(meta_data, cfg=self.demo_cfg)
  File "/opt/conda/lib/python3.8/site-packages/torch/nn/parallel/data_parallel.py", line 166, in forward
    replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
  File "/opt/conda/lib/python3.8/site-packages/torch/nn/parallel/comm.py", line 58, in broadcast_coalesced
    return torch._C._broadcast_coalesced(tensors, devices, buffer_size)
RuntimeError: NCCL Error 2: unhandled system error
```
The short version: `RuntimeError: NCCL Error 2: unhandled system error` (torch 1.8.1, CUDA 11.1, `docker run --gpus all` without other options).
"""), [F("nccl-system-error", 2)])

# ==========================================================================
# 54  DeepSpeed on two p4d nodes (pdsh prefixes every line with the host):
#     ncclInternalError on both, with the older "internal error" wording
# ==========================================================================
lines = []
for host in ("compute-dy-p4d24xlarge-77", "compute-dy-p4d24xlarge-78"):
    lines += [f"{host}: {x}" for x in B("""
[2022-03-11 09:41:07,512] [INFO] [engine.py:1126:_configure_optimizer] Using client Optimizer as basic optimizer
Traceback (most recent call last):
  File "utils/train_gpt.py", line 412, in <module>
    main()
  File "/opt/conda/lib/python3.6/site-packages/deepspeed/runtime/engine.py", line 231, in __init__
    self._broadcast_model()
  File "/opt/conda/lib/python3.6/site-packages/torch/distributed/distributed_c10d.py", line 1078, in broadcast
    work = default_pg.broadcast([tensor], opts)
RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825, internal error, NCCL version 2.7.8
ncclInternalError: Internal check failed. This is either a bug in NCCL or due to memory corruption
""")]
lines += B("""
pdsh@ip-10-0-1-77: compute-dy-p4d24xlarge-78: ssh exited with exit code 1
pdsh@ip-10-0-1-77: compute-dy-p4d24xlarge-77: ssh exited with exit code 1
""")
case("nccl-internal-error-two-hosts", lines, [F("nccl-internal-error", 4, {"nccl_version": "2.7.8"})])

# ==========================================================================
# 55  vLLM on Ray (torch 2.1): the newer wording, "internal error - please
#     report this issue to the NCCL developers", with the "Last error:" line
# ==========================================================================
P = "(RayWorkerVllm pid=7602) ERROR 04-07 00:57:46 ray_utils.py:45]"
case("nccl-internal-error-vllm-ray", B(f"""
INFO 04-07 00:57:31 llm_engine.py:79] Initializing an LLM engine with config: model='/models/Mixtral-8x7B-Instruct-v0.1', tensor_parallel_size=2, dtype=torch.bfloat16
INFO 04-07 00:57:40 pynccl_utils.py:45] vLLM is using nccl==2.18.6
{P} Error executing method init_device. This might cause deadlock in distributed execution.
{P} Traceback (most recent call last):
{P}   File "/root/miniconda3/lib/python3.10/site-packages/vllm/engine/ray_utils.py", line 37, in execute_method
{P}     return executor(*args, **kwargs)
{P}   File "/root/miniconda3/lib/python3.10/site-packages/vllm/worker/worker.py", line 100, in init_device
{P}     init_distributed_environment(self.parallel_config, self.rank,
{P}   File "/root/miniconda3/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2050, in all_reduce
{P}     work = group.allreduce([tensor], opts)
{P} torch.distributed.DistBackendError: NCCL error in: /root/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, internal error - please report this issue to the NCCL developers, NCCL version 2.18.6
{P} ncclInternalError: Internal check failed.
{P} Last error:
{P} Attribute busid of node nic not found
"""), [F("nccl-internal-error", 2, {"nccl_version": "2.18.6"})])

# ==========================================================================
# 56-58  TensorFlow's OOM: the tensor's size from its shape and type, the BFC
#        allocator's limit and use from the statistics printed just before
# ==========================================================================
TF_SIZES = {"float": 4, "half": 2, "double": 8, "int32": 4, "int64": 8, "bfloat16": 2}


def tf_oom(shape, dtype, device, limit=None, inuse=None):
    """The message and its expected values; limit and inuse in bytes, as the stats print them."""
    msg = (f"OOM when allocating tensor with shape[{','.join(map(str, shape))}] and type {dtype} on "
           f"/job:localhost/replica:0/task:0/device:{device} by allocator "
           f"{'GPU_0_bfc' if device.startswith('GPU') else 'cpu'}")
    req = TF_SIZES[dtype]
    for d in shape:
        req *= d
    req = round(req / 1048576, 4)
    vals = {"shape": ",".join(map(str, shape)), "dtype": dtype, "device": device, "requested_mib": req}
    if limit is not None:
        vals["limit_mib"] = round(limit / 1048576, 4)
    if inuse is not None:
        vals["in_use_mib"] = round(inuse / 1048576, 4)
    if device.startswith("CPU"):
        vals["verdict"] = "host-memory"
    elif limit is not None and req >= 100 * vals["limit_mib"]:
        vals["verdict"] = "size-bug"
    else:
        vals["verdict"] = "too-big"
    return msg, vals


BFC = "I tensorflow/core/common_runtime/bfc_allocator.cc"
m, v = tf_oom([32, 256, 128, 128], "float", "GPU:0", 10990990541, 10632794112)
assert v["verdict"] == "too-big"
case("tf-oom-bfc-stats", B(f"""
Epoch 1/30
2021-03-30 10:17:41.350311: W tensorflow/core/common_runtime/bfc_allocator.cc:456] Allocator (GPU_0_bfc) ran out of memory trying to allocate 512.00MiB (rounded to 536870912)requested by op model/conv2d_3/Conv2D
Current allocation summary follows.
2021-03-30 10:17:41.350402: {BFC}:991] BFCAllocator dump for GPU_0_bfc
2021-03-30 10:17:41.350418: {BFC}:998] Bin (256): 	Total Chunks: 412, Chunks in use: 409. 103.0KiB allocated for chunks. 102.2KiB in use in bin. 41.5KiB client-requested in use in bin.
2021-03-30 10:17:41.350433: {BFC}:998] Bin (268435456): 	Total Chunks: 13, Chunks in use: 13. 6.50GiB allocated for chunks. 6.50GiB in use in bin. 6.50GiB client-requested in use in bin.
2021-03-30 10:17:41.350442: {BFC}:1014] Bin for 512.00MiB was 256.00MiB, Chunk State: 
2021-03-30 10:17:41.369870: {BFC}:1034] InUse at 7f2c4e000000 of size 1280 next 1
2021-03-30 10:17:41.369881: {BFC}:1034] InUse at 7f2c4e000500 of size 256 next 2
2021-03-30 10:17:41.382114: {BFC}:1046]      Summary of in-use Chunks by size: 
2021-03-30 10:17:41.382121: {BFC}:1049] 409 Chunks of size 256 totalling 102.2KiB
2021-03-30 10:17:41.382198: {BFC}:1049] 13 Chunks of size 536870912 totalling 6.50GiB
2021-03-30 10:17:41.382209: {BFC}:1053] Sum Total of in-use chunks: 9.90GiB
2021-03-30 10:17:41.382214: {BFC}:1055] total_region_allocated_bytes_: 10990990541 memory_limit_: 10990990541 available bytes: 0 curr_region_allocation_bytes_: 21981981082
2021-03-30 10:17:41.382225: {BFC}:1061] Stats: 
Limit:                     10990990541
InUse:                     10632794112
MaxInUse:                  10632794368
NumAllocs:                        2433
MaxAllocSize:               1073741824
Reserved:                            0
PeakReserved:                        0
LargestFreeBlock:                    0

2021-03-30 10:17:41.382301: W tensorflow/core/common_runtime/bfc_allocator.cc:467] ****************************************************************************************************
2021-03-30 10:17:41.382331: W tensorflow/core/framework/op_kernel.cc:1763] OP_REQUIRES failed at conv_ops.cc:539 : Resource exhausted: {m}
Traceback (most recent call last):
  File "train_unet.py", line 211, in <module>
    model.fit(train_ds, validation_data=val_ds, epochs=30, callbacks=callbacks)
  File "/usr/local/lib/python3.8/dist-packages/tensorflow/python/eager/execute.py", line 59, in quick_execute
    inputs, attrs, num_outputs)
tensorflow.python.framework.errors_impl.ResourceExhaustedError:  {m}
	 [[node model/conv2d_3/Conv2D (defined at train_unet.py:211) ]]
Hint: If you want to see a list of allocated tensors when OOM happens, add report_tensor_allocations_upon_oom to RunOptions for current allocation info.
 [Op:__inference_train_function_4131]
"""), [F("tf-oom", 2, v)])

m, v = tf_oom([50000, 50000, 128], "float", "GPU:0", 10619240448, 2437124096)
assert v["verdict"] == "size-bug"
case("tf-oom-size-bug-tf1", B(f"""
2019-06-12 16:40:11.018423: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1115] Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 10127 MB memory) -> physical GPU (device: 0, name: GeForce GTX 1080 Ti, pci bus id: 0000:01:00.0, compute capability: 6.1)
pairwise distances for 50000 points (dim 128)
2019-06-12 16:40:13.551260: W tensorflow/core/common_runtime/bfc_allocator.cc:267] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.16TiB.  Current allocation summary follows.
2019-06-12 16:40:13.551372: {BFC}:597] Bin (256): 	Total Chunks: 12, Chunks in use: 12. 3.0KiB allocated for chunks. 3.0KiB in use in bin. 48B client-requested in use in bin.
2019-06-12 16:40:13.553101: {BFC}:645] Sum Total of in-use chunks: 2.27GiB
2019-06-12 16:40:13.553110: {BFC}:647] Stats: 
Limit:                 10619240448
InUse:                  2437124096
MaxInUse:               2437124096
NumAllocs:                      31
MaxAllocSize:           2437120000

2019-06-12 16:40:13.553124: W tensorflow/core/common_runtime/bfc_allocator.cc:271] *********************_______________________________________________________________________________
2019-06-12 16:40:13.553151: W tensorflow/core/framework/op_kernel.cc:1401] OP_REQUIRES failed at cwise_ops_common.cc:70 : Resource exhausted: {m}
Traceback (most recent call last):
  File "knn.py", line 31, in <module>
    d = sess.run(dist, feed_dict={{x: points}})
  File "/home/ml/venv/lib/python3.6/site-packages/tensorflow/python/client/session.py", line 1348, in _do_call
    raise type(e)(node_def, op, message)
tensorflow.python.framework.errors_impl.ResourceExhaustedError: {m}
	 [[node sub (defined at knn.py:24) ]]
Hint: If you want to see a list of allocated tensors when OOM happens, add report_tensor_allocations_upon_oom to RunOptions for current allocation info.
"""), [F("tf-oom", 2, v)])

m, v = tf_oom([60000, 224, 224, 3], "float", "CPU:0")
case("tf-oom-host-memory", B(f"""
2022-05-03 09:12:40.117802: I tensorflow/core/platform/cpu_feature_guard.cc:151] This TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX2 FMA
Loaded 60000 images into a numpy array: (60000, 224, 224, 3) float32
Converting the whole array to a tensor...
2022-05-03 09:12:58.601113: W tensorflow/core/framework/cpu_allocator_impl.cc:82] Allocation of 36126720000 exceeds 10% of free system memory.
2022-05-03 09:13:02.448210: W tensorflow/core/framework/op_kernel.cc:1733] RESOURCE_EXHAUSTED: failed to allocate memory
Traceback (most recent call last):
  File "prep.py", line 40, in <module>
    ds = tf.data.Dataset.from_tensor_slices((images, labels))
  File "/opt/venv/lib/python3.9/site-packages/tensorflow/python/framework/constant_op.py", line 102, in convert_to_eager_tensor
    return ops.EagerTensor(value, ctx.device_name, dtype)
tensorflow.python.framework.errors_impl.ResourceExhaustedError: {m} [Op:Cast]
"""), [F("tf-oom", 1, v)])

# ==========================================================================
# 59  TensorFlow 2.4 without the CUDA 11.0 libraries: warnings only, then the
#     model trains on the CPU (TensorRT's and CUPTI's missing libraries are
#     harmless and not counted)
# ==========================================================================
DSO = "W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library"
case("tf-cudart-missing-runs-on-cpu", B(f"""
2021-04-09 19:52:41.024315: {DSO} 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory
2021-04-09 19:52:41.024341: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine.
2021-04-09 19:52:43.310118: {DSO} 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or directory
2021-04-09 19:52:43.310155: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please make sure the missing libraries mentioned above are installed properly.
2021-04-09 19:52:44.871001: I tensorflow/compiler/jit/xla_gpu_device.cc:99] Not creating XLA devices, tf_xla_enable_xla_devices not set
2021-04-09 19:52:44.872913: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1720] Found device 0 with properties: 
pciBusID: 0000:01:00.0 name: NVIDIA GeForce RTX 3080 computeCapability: 8.6
2021-04-09 19:52:44.873127: {DSO} 'libcublas.so.11'; dlerror: libcublas.so.11: cannot open shared object file: No such file or directory
2021-04-09 19:52:44.873211: {DSO} 'libcufft.so.10'; dlerror: libcufft.so.10: cannot open shared object file: No such file or directory
2021-04-09 19:52:44.873402: {DSO} 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory
2021-04-09 19:52:44.873415: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1757] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.
Skipping registering GPU devices...
2021-04-09 19:52:45.102250: {DSO} 'libcupti.so.11.0'; dlerror: libcupti.so.11.0: cannot open shared object file: No such file or directory
Epoch 1/10
1875/1875 [==============================] - 212s 113ms/step - loss: 0.4971 - accuracy: 0.8243
Epoch 2/10
 611/1875 [========>.....................] - ETA: 2:21 - loss: 0.3712 - accuracy: 0.8667
"""), [F("tf-cuda-libs-missing", 4, {"library": "libcudart.so.11.0"})])

# ==========================================================================
# 60  the same on Windows (DLLs, CRLF line endings)
# ==========================================================================
DSOW = "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library"
case("tf-cudart-missing-windows-crlf", B(rf"""
(tf) C:\Users\amara\src\mnist>python train.py
2022-01-17 10:02:51.402114: {DSOW} 'cudart64_110.dll'; dlerror: cudart64_110.dll not found
2022-01-17 10:02:51.402301: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine.
2022-01-17 10:02:55.117890: {DSOW} 'cublas64_11.dll'; dlerror: cublas64_11.dll not found
2022-01-17 10:02:55.118402: {DSOW} 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found
2022-01-17 10:02:55.118477: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.
Skipping registering GPU devices...
2022-01-17 10:02:55.120081: I tensorflow/core/platform/cpu_feature_guard.cc:151] This TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX AVX2
Epoch 1/5
1875/1875 [==============================] - 9s 4ms/step - loss: 0.2950 - accuracy: 0.9140
Epoch 2/5
1875/1875 [==============================] - 8s 4ms/step - loss: 0.1412 - accuracy: 0.9583
"""), [F("tf-cuda-libs-missing", 3, {"library": "cudart64_110.dll"})], eol="\r\n")

# ==========================================================================
# 61  unattended-upgrades replaced the driver's libraries under a running
#     node: the container hook, nvidia-smi and the kernel all say it
# ==========================================================================
case("nvml-driver-library-mismatch", B("""
===== slurm-90211.out =====
pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.05-py3
pyxis: imported docker image: nvcr.io#nvidia/pytorch:24.05-py3
slurmstepd: error: pyxis: container start failed with error code: 1
slurmstepd: error: pyxis: printing enroot log file:
slurmstepd: error: pyxis:     nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown
slurmstepd: error: pyxis:     [ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1
slurmstepd: error: pyxis: couldn't start container
srun: error: gpu-b12: task 0: Exited with exit code 1
===== on gpu-b12 =====
$ nvidia-smi
Failed to initialize NVML: Driver/library version mismatch
NVML library version: 535.183
$ grep nvidia /var/log/apt/history.log | tail -2
Start-Date: 2024-07-09  06:41:12
Upgrade: libnvidia-compute-535:amd64 (535.171.04-0ubuntu0.22.04.1, 535.183.01-0ubuntu0.22.04.1), nvidia-utils-535:amd64 (535.171.04-0ubuntu0.22.04.1, 535.183.01-0ubuntu0.22.04.1)
$ dmesg | tail -4
[612034.118250] NVRM: API mismatch: the client has the version 535.183.01, but
                NVRM: this kernel module has the version 535.171.04.  Please
                NVRM: make sure that this kernel module and all NVIDIA driver
                NVRM: components have the same version.
"""), [F("nvml-driver-mismatch", 3, {"client_version": "535.183.01"})])

# ==========================================================================
# 62  a DataLoader worker killed by the OOM killer (host RAM), pasted into
#     an issue with a bold title and the log in a code block
# ==========================================================================
case("dataloader-worker-killed-host-oom", B("""
**RuntimeError: DataLoader worker (pid 1817) is killed by signal: Killed.**

Training stops after about 40 minutes, always in the validation loop. 8 workers, 64 GB RAM, one A6000.
```
Traceback (most recent call last):
  File "/home/lgx/anaconda3/envs/py38/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/home/lgx/anaconda3/envs/py38/lib/python3.8/queue.py", line 179, in get
    self.not_empty.wait(remaining)
  File "/home/lgx/anaconda3/envs/py38/lib/python3.8/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 1817) is killed by signal: Killed. 

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "train_meta.py", line 131, in <module>
    val_loader=[x for x in val_loader]
  File "/home/lgx/anaconda3/envs/py38/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1146, in _try_get_data
    raise RuntimeError('DataLoader worker (pid(s) {}) exited unexpectedly'.format(pids_str)) from e
RuntimeError: DataLoader worker (pid(s) 1817) exited unexpectedly
```
`dmesg` says `Out of memory: Killed process 1817 (python) total-vm:41287352kB, anon-rss:30124520kB`
"""), [F("dataloader-worker-killed", 2, {"pid": 1817}), F("host-oom", 1)])

# ==========================================================================
# 63  a second torchrun on the same node with the default port (torch 2.0):
#     the c10d warnings and the error all name port 29500
# ==========================================================================
case("rendezvous-port-in-use", B("""
+ torchrun --nproc_per_node=2 tools/train.py -c configs/strategies/distill/dist_cifar.yaml --model cifar_resnet20
WARNING:torch.distributed.run:
*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.
*****************************************
[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).
[W socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).
[E socket.cpp:462] [c10d] The server socket has failed to listen on any local network address.
Traceback (most recent call last):
  File "/home/wcl/miniconda3/envs/kd/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/home/wcl/miniconda3/envs/kd/lib/python3.9/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 55, in next_rendezvous
    self._store = TCPStore(  # type: ignore[call-arg]
RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).
"""), [F("rendezvous-port-in-use", 3, {"port": 29500})])

# ==========================================================================
# 64  the same with torch 2.4's libuv store ("EADDRINUSE"), on another port
# ==========================================================================
case("rendezvous-port-in-use-libuv", B("""
$ MASTER_PORT=29512 swift sft --model LLM-Research/Meta-Llama-3.1-8B --train_type lora --deepspeed zero2
[INFO:swift] Setting args.lazy_tokenize: False
[INFO:swift] Global seed set to 42
run sh: `/opt/venv/bin/python -m torch.distributed.run --nproc_per_node 2 --master_port 29512 /opt/venv/lib/python3.11/site-packages/swift/cli/sft.py`
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", line 683, in _initialize_workers
    self._rendezvous(worker_group)
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 67, in next_rendezvous
    self._store = TCPStore(  # type: ignore[call-arg]
torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29512, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use
subprocess.CalledProcessError: Command '['/opt/venv/bin/python', '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--master_port', '29512']' returned non-zero exit status 1.
"""), [F("rendezvous-port-in-use", 1, {"port": 29512})])

# ==========================================================================
# 65-66  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True under a PyTorch
#        older than 2.1: it fails at the first CUDA allocation
# ==========================================================================
case("alloc-conf-expandable-segments-torch113", B("""
+ export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
+ srun python -m torch.distributed.run --nproc_per_node=2 finetune.py --config cfg/bert-large.yaml
[2024-02-20 14:02:11] rank 0: torch 1.13.1+cu117, 2 x NVIDIA A100-PCIE-40GB
[rank1]: Traceback (most recent call last):
[rank1]:   File "/scratch/jk/finetune.py", line 88, in <module>
[rank1]:     model = BertForSequenceClassification.from_pretrained(cfg.model).cuda(local_rank)
[rank0]: Traceback (most recent call last):
[rank0]:   File "/scratch/jk/finetune.py", line 88, in <module>
[rank0]:     model = BertForSequenceClassification.from_pretrained(cfg.model).cuda(local_rank)
[rank1]:   File "/scratch/jk/venv/lib/python3.9/site-packages/torch/nn/modules/module.py", line 664, in _apply
[rank1]:     param_applied = fn(param)
[rank1]: RuntimeError: Unrecognized CachingAllocator option: expandable_segments
[rank0]:   File "/scratch/jk/venv/lib/python3.9/site-packages/torch/nn/modules/module.py", line 664, in _apply
[rank0]:     param_applied = fn(param)
[rank0]: RuntimeError: Unrecognized CachingAllocator option: expandable_segments
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 40211) of binary: /scratch/jk/venv/bin/python
srun: error: gpu-c03: task 0: Exited with exit code 1
"""), [F("alloc-conf-expandable-segments-unsupported", 2, {"option": "expandable_segments"})])

case("alloc-conf-expandable-segments-torch201", B("""
$ env | grep -E 'CUDA|PYTORCH'
CUDA_VISIBLE_DEVICES=0
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
$ python -c 'import torch; print(torch.__version__)'
2.0.1+cu118
$ python generate.py --prompt "hello"
Loading checkpoint shards: 100%|██████████| 2/2 [00:04<00:00,  2.11s/it]
Traceback (most recent call last):
  File "/home/ab/llm/generate.py", line 41, in <module>
    model.to("cuda")
  File "/home/ab/.venv/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1145, in to
    return self._apply(convert)
  File "/home/ab/.venv/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1143, in convert
    return t.to(device, dtype if t.is_floating_point() or t.is_complex() else None, non_blocking)
RuntimeError: Unrecognized CachingAllocator option: expandable_segments
"""), [F("alloc-conf-expandable-segments-unsupported", 1, {"option": "expandable_segments"})])

# ==========================================================================
# 67  nothing matches: harmless lines that use the new signatures' words
#     (TensorRT's and CUPTI's optional libraries, the BFC allocator's
#     "not a failure" warning, c10d's IPv6 warning, the allocator setting
#     itself, a healthy driver load)
# ==========================================================================
case("harmless-mentions-tf-torch-driver", B(f"""
$ env | grep -E 'PYTORCH|TF_'
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
TF_FORCE_GPU_ALLOW_GROWTH=true
$ dmesg | grep NVRM
[    6.252567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024
[    7.619120] NVRM: GPU at 0000:01:00.0 has software scheduler ENABLED with policy BEST_EFFORT.
$ python train_tf.py
2024-06-03 10:00:01.118202: {DSO} 'libnvinfer.so.8'; dlerror: libnvinfer.so.8: cannot open shared object file: No such file or directory
2024-06-03 10:00:01.118240: {DSO} 'libnvinfer_plugin.so.8'; dlerror: libnvinfer_plugin.so.8: cannot open shared object file: No such file or directory
2024-06-03 10:00:01.118248: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please make sure the missing libraries mentioned above are installed properly.
2024-06-03 10:00:03.551020: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1635] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 22279 MB memory:  -> device: 0, name: NVIDIA RTX A5000, pci bus id: 0000:01:00.0, compute capability: 8.6
2024-06-03 10:00:09.774120: W tensorflow/tsl/framework/bfc_allocator.cc:296] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.26GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.
2024-06-03 10:00:12.090411: {DSO} 'libcupti.so.12'; dlerror: libcupti.so.12: cannot open shared object file: No such file or directory
2024-06-03 10:00:12.090470: E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1510] function cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback, this)failed with error CUPTI could not be loaded or symbol could not be found.
Epoch 1/3
625/625 [==============================] - 31s 41ms/step - loss: 0.6120 - accuracy: 0.7711
$ torchrun --nproc_per_node=2 train_torch.py
[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not supported by protocol).
[W socket.cpp:697] [c10d] The client socket cannot be initialized to connect to [localhost]:29500 (errno: 97 - Address family not supported by protocol).
[rank0]: step 100 loss 2.114 | DataLoader workers: 8, persistent, prefetch_factor 2
[rank0]: step 200 loss 1.873 | peak memory 61.2 GiB of 79.1 GiB, no retries
[rank0]: done in 412 s
"""), [])


# ==========================================================================
# 68  kubectl logs of four pods, one after the other: rank 2's device-side assert comes first in the
#     file, rank 5's illegal memory access three seconds earlier in time (its pod's logs come later);
#     the others' watchdog timeouts follow from it (issue 36, item 3)
# ==========================================================================
def k8s(t, rank, text):
    return f"2024-09-02T14:{t}Z stderr F [rank{rank}]: {text}"


lines = [
    "$ for p in $(kubectl get pods -l job=llm-sft -o name); do kubectl logs --timestamps $p; done",
    k8s("01:02.114820311", 2, "step 400 loss 1.9321 lr 2.0e-05"),
    k8s("03:19.402311590", 2, "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [311,0,0], thread: [64,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed."),
    k8s("03:19.418802117", 2, "Traceback (most recent call last):"),
    k8s("03:19.418830261", 2, '  File "/app/sft.py", line 301, in <module>'),
    k8s("03:19.418844700", 2, "RuntimeError: CUDA error: device-side assert triggered"),
    k8s("13:19.551202316", 0, "[E902 14:13:19.551101223 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8811, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600023 milliseconds before timing out."),
    k8s("01:02.120043870", 0, "step 400 loss 1.9318 lr 2.0e-05"),
    k8s("13:19.552781904", 1, "[E902 14:13:19.552688102 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8811, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600024 milliseconds before timing out."),
    k8s("01:02.117719032", 5, "step 400 loss 1.9330 lr 2.0e-05"),
    k8s("03:16.207733518", 5, "Traceback (most recent call last):"),
    k8s("03:16.207761249", 5, '  File "/app/sft.py", line 288, in <module>'),
    k8s("03:16.207773105", 5, "    loss.backward()"),
    k8s("03:16.207802871", 5, "RuntimeError: CUDA error: an illegal memory access was encountered"),
    k8s("03:16.207811302", 5, "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."),
    k8s("03:16.207815590", 5, "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."),
]
case("multirank-k8s-earliest-in-time-not-in-file", lines, [
    F("device-side-assert", 2, rank=2, ranks=[2]),
    F("nccl-watchdog-timeout", 2, rank=0, ranks=[0, 1]),
    F("illegal-memory-access", 1, rank=5, ranks=[5], root=True),
])

# ==========================================================================
# 69  srun -l prefixes; rank 1's NCCL error comes first in the file, but torchrun's summary names rank 3
#     as the first observed failure: its device-side assert is the root cause
# ==========================================================================
lines = B("""
0: [2024-10-11 08:14:02,118] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default
0: step 1200 | loss 2.0411 | 9821 tok/s
1: Traceback (most recent call last):
1:   File "/home/ml/train.py", line 140, in <module>
1:     dist.all_reduce(grad)
1: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
1: ncclUnhandledCudaError: Call to CUDA function failed.
3: ../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.
3: Traceback (most recent call last):
3:   File "/home/ml/train.py", line 131, in <module>
3:     loss = criterion(logits, labels)
3: RuntimeError: CUDA error: device-side assert triggered
0: E1011 08:14:31.220000 139912 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 1 (pid: 40122) of binary: /usr/bin/python3
0: torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
0: ============================================================
0: train.py FAILED
0: ------------------------------------------------------------
0: Failures:
0: [1]:
0:   time      : 2024-10-11_08:14:31
0:   host      : gpu-a100-07
0:   rank      : 1 (local_rank: 1)
0:   exitcode  : 1 (pid: 40122)
0: ------------------------------------------------------------
0: Root Cause (first observed failure):
0: [0]:
0:   time      : 2024-10-11_08:14:29
0:   host      : gpu-a100-07
0:   rank      : 3 (local_rank: 3)
0:   exitcode  : 1 (pid: 40124)
0: ============================================================
""")
case("torchrun-root-cause-names-the-rank", lines, [
    F("nccl-error", 2, rank=1, ranks=[1]),
    F("device-side-assert", 2, rank=3, ranks=[3], root=True),
])


# ==========================================================================
# 70  the GPU had room when PyTorch reported: 2.35 GiB free against a 20 MiB request (the fragmentation
#     verdict would have been wrong: the allocator would have taken a new block); issue 36, item 5
# ==========================================================================
case("oom-transient-free-more-than-request", B("""
[2025-03-02 10:14:07,551] [INFO] [engine.py:1204:_configure] world_size=2, two ranks put on GPU 0 by a missing set_device
[2025-03-02 10:14:07,552] [INFO] [engine.py:1210:_configure] micro_batch=8 grad_accum=4
step 120 | loss 2.3315 | 5310 tok/s
step 140 | loss 2.2902 | 5296 tok/s
Traceback (most recent call last):
  File "/srv/train/sft.py", line 211, in <module>
    out = model(**batch)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1739, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 2.35 GiB is free. Including non-PyTorch memory, this process has 38.79 GiB memory in use. Process 51120 has 38.01 GiB memory in use. Of the allocated memory 33.50 GiB is allocated by PyTorch, and 4.80 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
"""), [F("pytorch-oom", 1, {"requested_mib": 20, "free_mib": 2406.4, "other_processes_mib": 38922.24,
                           "verdict": "transient"})])

# ==========================================================================
# 71  PyTorch 2.0's message with a memory fraction set: "18.00 GiB allowed;" is the limit it hit, though
#     the GPU has 5.6 GiB free
# ==========================================================================
case("oom-allowed-fraction", B("""
>>> import torch
>>> torch.cuda.set_per_process_memory_fraction(0.75, 0)
>>> x = [torch.empty(1 << 30, dtype=torch.uint8, device="cuda") for _ in range(17)]
>>> y = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity; 17.00 GiB already allocated; 5.61 GiB free; 17.73 GiB allowed; 17.00 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF
>>> torch.__version__
'2.0.1+cu118'
>>> exit()
"""), [F("pytorch-oom", 1, {"requested_mib": 2048, "allowed_mib": 18155.52, "free_mib": 5744.64,
                           "verdict": "too-big"})])

# ==========================================================================
# 72  JAX's XLA out of memory carries its size (human form, with newer JAX's payload)
# ==========================================================================
case("xla-oom-size", B("""
I0000 00:00:1718000000.112233  40412 service.cc:145] XLA service 0x55d1 initialized for platform CUDA
I0000 00:00:1718000000.112301  40412 service.cc:153]   StreamExecutor device (0): NVIDIA A100-SXM4-40GB, Compute Capability 8.0
2024-06-10 06:13:21.880412: W external/xla/xla/tsl/framework/bfc_allocator.cc:482] Allocator (GPU_0_bfc) ran out of memory trying to allocate 46.86GiB (rounded to 50315395072)requested by op
2024-06-10 06:13:21.880611: E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:3085] Execution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 46.86GiB. [executable_name='jit_train_step'] [tf-allocator-allocation-error='']
Traceback (most recent call last):
  File "/home/u/jaxrun/train.py", line 88, in <module>
    state, metrics = train_step(state, batch)
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 46.86GiB. [executable_name='jit_train_step'] [tf-allocator-allocation-error='']
--------------------
For simplicity, JAX has removed its internal frames from the traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include these.
"""), [F("cuda-error-oom", 2, {"requested_mib": 47984.64})])


# ==========================================================================
# 73  a JSON log (one record a line): a record's message holds a whole traceback with its newlines
#     escaped, and in it two failures: the illegal memory access, then NCCL's unhandled cuda error
#     it caused; each is found, the first is the root cause
# ==========================================================================
lines = [
    '{"ts":"2025-05-20T08:01:10.114Z","level":"info","logger":"trainer","msg":"step 3100 loss=1.873 lr=3.0e-05"}',
    '{"ts":"2025-05-20T08:01:12.880Z","level":"info","logger":"trainer","msg":"step 3120 loss=1.869 lr=3.0e-05"}',
    '{"ts":"2025-05-20T08:01:15.402Z","level":"info","logger":"trainer","msg":"step 3140 loss=1.870 lr=3.0e-05"}',
    '{"ts":"2025-05-20T08:01:16.031Z","level":"warning","logger":"torch.distributed","msg":"TORCH_NCCL_ASYNC_ERROR_HANDLING is set"}',
    '{"ts":"2025-05-20T08:01:17.552Z","level":"error","logger":"trainer","msg":"step failed","exc_info":"Traceback (most recent call last):\\n  File \\"/opt/app/train.py\\", line 402, in train_step\\n    loss.backward()\\n  File \\"/usr/local/lib/python3.11/site-packages/torch/_tensor.py\\", line 581, in backward\\n    torch.autograd.backward(\\nRuntimeError: CUDA error: an illegal memory access was encountered\\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\\n\\nDuring handling of the above exception, another exception occurred:\\n\\nTraceback (most recent call last):\\n  File \\"/opt/app/train.py\\", line 410, in train_step\\n    dist.barrier()\\ntorch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\\nncclUnhandledCudaError: Call to CUDA function failed."}',
    '{"ts":"2025-05-20T08:01:17.601Z","level":"info","logger":"trainer","msg":"saving emergency checkpoint skipped: CUDA context is unusable"}',
    '{"ts":"2025-05-20T08:01:17.933Z","level":"error","logger":"launcher","msg":"worker 0 exited with code 1"}',
    '{"ts":"2025-05-20T08:01:18.002Z","level":"info","logger":"launcher","msg":"stopping the other workers"}',
    '{"ts":"2025-05-20T08:01:19.420Z","level":"info","logger":"launcher","msg":"all workers stopped"}',
    '{"ts":"2025-05-20T08:01:19.421Z","level":"error","logger":"launcher","msg":"job failed"}',
]
case("json-log-two-failures-in-one-record", lines, [
    F("illegal-memory-access", 1, root=True),
    F("nccl-error", 1),
])


# --------------------------------------------------------------------------
# writing and self-check
# --------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CHECK = [
    ("pytorch-oom", r"CUDA out of memory\. Tried to allocate"),
    ("cuda-error-oom", r"CUDA error: out of memory|cuda runtime error \(2\) : out of memory|"
                       r"Out of memory while trying to allocate"),
    ("tf-oom", r"OOM when allocating tensor"),
    ("tf-cuda-libs-missing", r"Could not load dynamic library '(lib)?cu(?!pti)"),
    ("nvml-driver-mismatch", r"[Dd]river/library version mismatch|NVRM: API mismatch"),
    ("nccl-watchdog-timeout", r"Watchdog caught collective operation timeout"),
    ("cuda-driver-insufficient", r"CUDA driver version is insufficient for CUDA runtime version|"
                                 r"(?<!CUDA initialization: )The NVIDIA driver on your system is too old"),
    ("cuda-driver-insufficient-cpu-fallback",
     r"CUDA initialization: The NVIDIA driver on your system is too old"),
    ("no-cuda-device", r"no CUDA-capable device is detected|No CUDA GPUs are available"),
    ("invalid-device-ordinal", r"CUDA error: invalid device ordinal"),
    ("device-side-assert", r"CUDA error: device-side assert triggered"),
    ("illegal-memory-access", r"CUDA error: an illegal memory access was encountered"),
    ("nccl-system-error", r"unhandled system error|ncclSystemError"),
    ("nccl-internal-error", r"ncclInternalError|NCCL [Ee]rror.*internal error"),
    ("shm-bus-error", r"Unexpected bus error encountered in worker|workers are out of shared memory"),
    ("gpu-fallen-off-bus", r"fallen off the bus and is not responding"),
    ("dataloader-worker-killed", r"is killed by signal: Killed"),
    ("alloc-conf-expandable-segments-unsupported",
     r"Unrecognized CachingAllocator option: expandable_segments"),
    ("rendezvous-port-in-use", r"errno: 98 - Address already in use|name: EADDRINUSE|RuntimeError: Address already in use"),
    ("cudnn-error", r"cuDNN error: CUDNN_STATUS_(?!ALLOC_FAILED)\w+"),
    ("cublas-error", r"CUBLAS_STATUS_(?!ALLOC_FAILED)\w+"),
    ("tensors-on-different-devices", r"Expected all tensors to be on the same device"),
    # the families from their sources' lists (data/signatures/taxonomy.json), after failures.json's rows
    ("cuda-error-oom", r"CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|Cuda failure '?2? ?'?out of memory"),
    ("host-oom", r"Out of memory: Killed process|invoked oom-killer|OOMKilled|exitcode: -9|exitcode  : -9"),
    ("nccl-watchdog-timeout", r"milliseconds before timing out|Some NCCL operations have failed or timed out|"
                              r"Heartbeat monitor timed out|collective timeout from|watchdog got stuck"),
    ("nccl-error", r"ncclUnhandledCudaError|ncclInvalidArgument|ncclInvalidUsage|ncclRemoteError|"
                   r"unhandled cuda error|remote process exited|NCCL error in:|NCCL WARN .*([Ff]ail|[Ee]rror|Duplicate GPU|[Ii]nvalid|Broken pipe|"
                   r"closed by remote|[Tt]imeout|[Aa]bort|unhandled|refused)"),
    ("ecc-error", r"uncorrectable ECC error encountered"),
    ("device-side-assert", r"block: \[\d+, ?\d+, ?\d+\], thread: \[\d+, ?\d+, ?\d+\] Assertion `"),
    ("cuda-launch-failure", r"unspecified launch failure|misaligned address|an illegal instruction was encountered|"
                            r"too many resources requested for launch"),
    ("gpu-lost", r"Unable to determine the device handle for GPU|GPU is lost|RmInitAdapter failed"),
]
XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:]+)\): (\d+),")


def rough_findings(text):
    """Independent of the hand-written expectations: ids, codes and counts by plain regex."""
    order, counts = [], {}
    for whole in re.split(r"\r\n|\n", text):
        seen = set()
        # (a JSON record's escaped newlines end a piece, matched as a line; the record counts once)
        for raw in whole.split("\\n"):
            line = ANSI.sub("", raw)
            mx = XID.search(line)
            hits = [("xid", int(mx.group(2)), mx.group(1))] if mx else [id for id, rx in CHECK if re.search(rx, line)][:1]
            mg = re.search(r"GPU (\d+)", line)
            if hits == ["pytorch-oom"] and mg:
                hits = [("pytorch-oom", int(mg.group(1)))]  # one finding per GPU
            # (a piece is one finding: the first signature, in file order, that matches it)
            for h in hits:
                if h not in counts:
                    order.append(h)
                    counts[h] = 0
                if h not in seen:
                    counts[h] += 1
                    seen.add(h)
    # (the expectations name an Xid by its code, an OOM by its id: its GPU only keeps them apart)
    return [((h[0], h[1]) if h[0] == "xid" else h[0] if isinstance(h, tuple) else h, counts[h]) for h in order]


def main():
    for old in os.listdir(HERE):
        if re.match(r"\d\d-.*\.(log|expect)$", old):
            os.remove(os.path.join(HERE, old))
    ok = True
    for n, c in enumerate(CASES, 1):
        base = os.path.join(HERE, f"{n:02d}-{c['name']}")
        assert 10 <= len(c["lines"]) <= 60, (c["name"], len(c["lines"]))
        text = c["eol"].join(c["lines"]) + c["eol"]
        with open(base + ".log", "wb") as f:
            f.write(text.encode("utf-8"))
        want = {"exit": 0 if c["findings"] else 1, "findings": c["findings"]}
        with open(base + ".expect", "w") as f:
            f.write(json.dumps(want, indent=2, ensure_ascii=False) + "\n")
        mine = [((f["id"], f["values"]["code"]) if f["id"] == "xid" else f["id"], f["count"])
                for f in c["findings"]]
        rough = rough_findings(text)
        if mine != rough:
            ok = False
            print(f"MISMATCH {n:02d}-{c['name']}: expect {mine}, regex check {rough}")
    print(f"{len(CASES)} cases written to {HERE}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
