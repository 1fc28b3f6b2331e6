"""SIMULATOR - Jetson unified-memory start-up simulator for vLLM (tests only).

vLLM's CPU build cannot run out of GPU memory, so no real component on this machine can show a
Jetson's start-up memory failures. This wrapper is the one simulator the role tests use for them
(issue 7: the start-up retry path). It stands in front of the REAL vLLM as the unit's native
command::

    ExecStart=/usr/bin/python3 /usr/local/bin/jetson-memory-simulator --config /etc/jetson-memory-simulator.json \
              -- /var/cache/jetson_llm_vllm/venv/bin/vllm serve MODEL ... --speculative-config {...}

and either fails the way vLLM fails on a Jetson, printing vLLM's own error text and exiting 1,
or ``exec``s the real vLLM with the arguments unchanged (the service then is the real server).

The memory model (all sizes simulated, in GiB; the config sets them):

* a model's weights take ``bytes on disk x scale`` (so a larger draft really is larger);
* free memory at start-up = ``total - other_used - weights read into the page cache`` (target and
  draft): unified memory counts page cache as used, the Jetson behaviour behind vLLM issue 48140;
* vLLM's first check: ``gpu_memory_utilization x total`` must not exceed the free memory, else
  "Free memory on device ... on startup is less than desired GPU memory utilization";
* its second: the KV cache gets ``gpu_memory_utilization x total - weights - activation``; below
  ``kv_cache_needed`` (one request at --max-model-len) it fails with "... KV cache is needed, which
  is larger than the available KV cache memory", at or below 0 with "No available memory for the
  cache blocks".

Without ``--speculative-config`` and with a model the config does not list, it only checks and
execs: it never changes what the real vLLM does once it starts.
"""
import json
import os
import sys

GIB = float(1 << 30)


def _die(lines):
    for line in lines:
        print(line, file=sys.stderr, flush=True)
    sys.exit(1)


def _bytes_on_disk(path):
    if not os.path.isdir(path):
        return 0
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            if name.endswith(('.safetensors', '.bin', '.pt')):
                total += os.path.getsize(os.path.join(root, name))
    return total


def _arg(argv, flag, default=None):
    """The value of ``flag``; given more than once, the last one wins, as with vLLM's argparse."""
    value = default
    for i, item in enumerate(argv):
        if item == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif item.startswith(flag + '='):
            value = item.split('=', 1)[1]
    return value


def check(config, serve_args):
    """The error lines vLLM would print on the simulated Jetson, or [] when it would start."""
    scale = float(config['gib_per_byte_on_disk'])
    total = float(config['total_gib'])
    model = serve_args[1] if len(serve_args) > 1 and serve_args[0] == 'serve' else _arg(serve_args, '--model', '')
    gmu = float(_arg(serve_args, '--gpu-memory-utilization', '0.9'))
    spec = json.loads(_arg(serve_args, '--speculative-config', 'null') or 'null') or {}
    weights = _bytes_on_disk(model) * scale
    draft = spec.get('model')
    if draft:
        weights += _bytes_on_disk(draft) * scale
    free = total - float(config['other_used_gib']) - weights
    requested = gmu * total
    if requested > free:
        return ['ValueError: Free memory on device (%.2f/%.2f GiB) on startup is less than desired GPU memory '
                'utilization (%s, %.2f GiB). Decrease GPU memory utilization or reduce GPU memory used by other '
                'processes.' % (free, total, gmu, requested),
                'RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}']
    kv_available = requested - weights - float(config['activation_gib'])
    if kv_available <= 0:
        return ['ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` '
                'when initializing the engine.',
                'RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}']
    needed = float(config['kv_cache_needed_gib'])
    if kv_available < needed:
        max_len = int(_arg(serve_args, '--max-model-len', '0') or 0)
        return ["ValueError: To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache "
                "is needed, which is larger than the available KV cache memory (%.2f GiB). Try increasing "
                "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
                % (max_len, needed, kv_available),
                'RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}']
    return []


def main(argv):
    if len(argv) < 4 or argv[0] != '--config' or argv[2] != '--':
        _die(['usage: jetson-memory-simulator --config FILE -- VLLM serve MODEL [ARGS...]'])
    with open(argv[1], encoding='utf-8') as handle:
        config = json.load(handle)
    command = argv[3:]
    print('[jetson-memory-simulator] SIMULATED Jetson memory check before the real vLLM', file=sys.stderr, flush=True)
    errors = check(config, command[1:])
    if errors:
        _die(errors)
    os.execv(command[0], command)


if __name__ == '__main__':
    main(sys.argv[1:])
