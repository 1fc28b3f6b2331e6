"""Hostile inputs and faulty servers for jetson_llm.vllm.vllm_benchmark (run by test_hostile_inputs.py).

The first table holds malformed options: each must fail before any request, with a message naming
the option, the value (truncated) and what is allowed. The second runs small benchmarks against the
streaming simulator (tests/utils/fake_vllm.py) behaving badly: each must end in bounded time with a
clear failure, or with the documented fallback and a warning.
"""
from hostile import Hostile

MODULE = "jetson_llm.vllm.vllm_benchmark"
LONG_HOST = "a" * 10000
LONG_ENDPOINT = "http://%s:8000" % LONG_HOST


def bad(case_id, args, expect, secrets=(), writes=None, max_seconds=30.0):
    """A malformed input: the module fails before sending anything."""
    return Hostile(id="benchmark-" + case_id, module=MODULE, args=args, expect=tuple(expect), secrets=tuple(secrets),
                   writes=writes, max_seconds=max_seconds, tags=("input",))


def small(**args):
    """A small, fast workload against the case's simulator, with short timeouts."""
    base = {"endpoint": "{endpoint}", "concurrency": [1], "num_prompts": 1, "warmup_prompts": 0, "input_len": 16,
            "output_len": 8, "dataset": "random", "request_timeout": 2, "request_deadline": 4}
    base.update(args)
    return base


def server(case_id, behaviour, expect, outcome="failed", max_seconds=40.0, **args):
    """A run against a faulty simulator."""
    return Hostile(id="benchmark-server-" + case_id, module=MODULE, args=small(**args), expect=tuple(expect),
                   outcome=outcome, server=behaviour, max_seconds=max_seconds, tags=("server",),
                   writes=args.get("output_file") if outcome == "failed" else None)


INPUTS = [
    # api_key: header values are checked up front; the key is never echoed, not even in part
    bad("api-key-trailing-lf", {"api_key": "sk-hostile-secret-1\n"}, ["api_key contains a line feed", "YAML"],
        secrets=["sk-hostile-secret-1"]),
    bad("api-key-crlf", {"api_key": "sk-hostile-secret-2\r\n"}, ["api_key contains a carriage return", "printable ASCII"],
        secrets=["sk-hostile-secret-2"]),
    bad("api-key-non-latin1", {"api_key": "sk-hostile-secret-3-\u2603"}, ["api_key contains a non-ASCII character"],
        secrets=["sk-hostile-secret-3"]),
    bad("api-key-latin1", {"api_key": "sk-hostile-secret-4-\u00e9"}, ["api_key contains a non-ASCII character"],
        secrets=["sk-hostile-secret-4"]),
    bad("api-key-nul", {"api_key": "sk-hostile-\u0000-secret-5"}, ["api_key contains a NUL byte"],
        secrets=["sk-hostile-", "-secret-5"]),
    bad("api-key-inner-newline", {"api_key": "sk-hostile\nsecret-6"}, ["api_key contains a line feed at character 11"],
        secrets=["sk-hostile", "secret-6"]),
    bad("api-key-too-long", {"api_key": "sk-" + "q7" * 3000}, ["6003 characters long", "at most 4096"],
        secrets=["q7q7q7q7"]),
    # endpoint: passwords masked, long values truncated, only a server root
    bad("endpoint-password", {"endpoint": "http://admin:hunter2-secret-7@127.0.0.1:8000"},
        ["must not carry credentials", "admin:********@", "api_key"], secrets=["hunter2-secret-7"]),
    bad("endpoint-password-and-path", {"endpoint": "https://ops:pw-secret-8@jetson.lan/v1/models"},
        ["must not carry credentials"], secrets=["pw-secret-8"]),
    bad("endpoint-password-bad-port", {"endpoint": "http://ops:pw-secret-9@jetson.lan:99999"},
        ["endpoint", "ops:********@"], secrets=["pw-secret-9"]),
    # (Ansible echoes the module arguments whole in "invocation"; the message shows 120 characters and the length)
    bad("endpoint-10000-characters", {"endpoint": LONG_ENDPOINT}, ["longer than 2048 characters", "(%d characters)" % len(LONG_ENDPOINT)]),
    bad("endpoint-no-scheme", {"endpoint": "127.0.0.1:8000"}, ["'127.0.0.1:8000'", "must start with http://"]),
    bad("endpoint-ftp", {"endpoint": "ftp://jetson.lan"}, ["'ftp://jetson.lan'", "must start with http://"]),
    bad("endpoint-with-path", {"endpoint": "http://127.0.0.1:8000/v1"}, ["without a path", "http://127.0.0.1:8000"]),
    bad("endpoint-port-out-of-range", {"endpoint": "http://127.0.0.1:99999"}, ["not a valid URL"]),
    bad("endpoint-port-zero", {"endpoint": "http://127.0.0.1:0"}, ["port 0", "1-65535"]),
    bad("endpoint-header-injection", {"endpoint": "http://127.0.0.1:8000\r\nX-Injected: 1"},
        ["control or non-ASCII characters"]),
    bad("endpoint-space-in-host", {"endpoint": "http://jetson lan:8000"}, ["spaces"]),
    bad("endpoint-bad-host", {"endpoint": "http://jet$on:8000"}, ["invalid host", "jet$on"]),
    # timeouts: finite and bounded
    bad("request-timeout-inf", {"request_timeout": "inf"}, ["request_timeout", "got inf", "<= 3600"]),
    bad("request-timeout-1e10", {"request_timeout": 1e10}, ["request_timeout", "10000000000.0", "<= 3600"]),
    bad("request-timeout-nan", {"request_timeout": "nan"}, ["request_timeout", "got nan", "finite"]),
    bad("request-timeout-negative", {"request_timeout": -5}, ["request_timeout", "got -5.0", "> 0"]),
    bad("request-deadline-inf", {"request_deadline": "inf"}, ["request_deadline", "got inf", "<= 86400"]),
    bad("request-deadline-zero", {"request_deadline": 0}, ["request_deadline", "got 0.0", "> 0"]),
    # other floats: finite, in range
    bad("temperature-inf", {"temperature": "inf"}, ["temperature", "got inf", "finite"]),
    bad("temperature-nan", {"temperature": "nan"}, ["temperature", "got nan", "finite"]),
    bad("temperature-negative", {"temperature": -1}, ["temperature", "got -1.0", ">= 0"]),
    bad("max-failed-ratio-nan", {"max_failed_ratio": "nan"}, ["max_failed_ratio", "got nan", "<= 1"]),
    bad("max-failed-ratio-2", {"max_failed_ratio": 2}, ["max_failed_ratio", "got 2.0", "<= 1"]),
    # counts: bounded, so nothing hangs building prompts
    bad("num-prompts-1e12", {"num_prompts": 1000000000000}, ["num_prompts", "1000000000000", "from 1 to 10000"]),
    bad("num-prompts-zero", {"num_prompts": 0}, ["num_prompts", "got 0", "from 1 to 10000"]),
    bad("warmup-prompts-1e9", {"warmup_prompts": 1000000000}, ["warmup_prompts", "from 0 to 1000"]),
    bad("input-len-1e9", {"input_len": 1000000000}, ["input_len", "1000000000", "from 1 to 131072"]),
    bad("output-len-negative", {"output_len": -1}, ["output_len", "got -1", "from 1 to 131072"]),
    bad("concurrency-zero", {"concurrency": [1, 0]}, ["concurrency", "0 is not allowed", "from 1 to 256"]),
    bad("concurrency-huge", {"concurrency": [100000]}, ["concurrency", "100000", "from 1 to 256"]),
    bad("concurrency-too-many-levels", {"concurrency": list(range(1, 41))}, ["concurrency", "1 to 16"]),
    bad("concurrency-duplicate", {"concurrency": [8, 8]}, ["lists 8 twice"]),
    bad("concurrency-not-a-number", {"concurrency": [1, "x"]}, ["concurrency"]),
    bad("seed-negative", {"seed": -1}, ["seed", "got -1", "from 0 to 4294967295"]),
    # names and labels: bounded and echoed truncated
    bad("model-10000-characters", {"model": "m" * 10000}, ["model must be", "1 to 512 characters", "(10000 characters)"]),
    bad("model-blank", {"model": "   "}, ["model must be", "'   '"]),
    bad("container-600-characters", {"container": "c" * 600}, ["container must be", "(600 characters)"]),
    bad("dataset-unknown", {"dataset": "sharegpt"}, ["dataset", "sharegpt", "builtin, random, file"]),
    bad("dataset-file-without-prompts-file", {"dataset": "file"}, ["dataset is file", "prompts_file"]),
    bad("prompts-file-with-builtin", {"prompts_file": "/etc/hostname"}, ["only used with dataset=file"]),
    # files: regular files only, really writable
    bad("prompts-file-dev-zero", {"dataset": "file", "prompts_file": "/dev/zero"},
        ["prompts_file /dev/zero is a character device", "regular"]),
    bad("prompts-file-directory", {"dataset": "file", "prompts_file": "{tmp}"}, ["is a directory"]),
    bad("prompts-file-missing", {"dataset": "file", "prompts_file": "{tmp}/none.jsonl"},
        ["Cannot read prompts_file", "No such file"]),
    bad("output-file-proc", {"output_file": "/proc/self/bench.json"},
        ["output_file /proc/self/bench.json cannot be written", "creating a file in /proc/self failed"],
        writes="/proc/self/bench.json"),
    bad("output-file-sys", {"output_file": "/sys/kernel/jetson_llm/bench.json"},
        ["output_file /sys/kernel/jetson_llm/bench.json cannot be written"], writes="/sys/kernel/jetson_llm"),
    bad("output-file-dev-null", {"output_file": "/dev/null"}, ["/dev/null is a character device", "not a regular file"]),
    bad("output-file-directory", {"output_file": "{tmp}"}, ["is a directory", "benchmark.json"]),
    bad("output-file-under-a-file", {"output_file": "/etc/hostname/bench.json"}, ["/etc/hostname is not a directory"],
        writes="/etc/hostname/bench.json"),
    bad("unknown-option", {"num_promts": 5}, ["num_promts"]),
]

SERVERS = [
    server("keepalive-comments-forever", "keepalive_forever", ["request_deadline=4s", "1 token chunk(s)"],
           output_file="{tmp}/bench.json"),
    server("hang-before-headers", "hang_before_headers", ["timed out", "request_timeout=2s"]),
    server("detokenize-404", "detokenize_404", ["/detokenize", "HTTP 404", "approximate"], outcome="ok"),
    server("detokenize-500", "detokenize_500", ["/detokenize", "HTTP 500", "approximate"], outcome="ok"),
    server("tokenize-strings", "tokenize_bad_tokens", ['"tokens" list of token ids', "approximate"], outcome="ok"),
    server("models-data-int", "models_data_int", ['"data" that is 5, not a list', "GET /v1/models"]),
    server("models-int-ids", "models_int_ids", ["model id that is 5, not a non-empty string"]),
    server("models-empty-body", "models_empty_body", ["not with UTF-8 JSON", "an empty body"]),
    server("models-non-utf8-body", "models_non_utf8", ["GET", "/v1/models", "not with UTF-8 JSON"]),
    server("models-endless-body", "models_endless_body", ["/v1/models", "request_deadline=4s"]),
    server("models-huge-header-line", "models_huge_headers", ["/v1/models", "invalid HTTP response"]),
    server("models-500-headers", "models_many_headers", ["/v1/models", "invalid HTTP response", "headers"]),
    server("redirect-loop", "redirect_loop", ["HTTP 302", "does not follow redirects"]),
    server("usage-larger-than-max-tokens", "usage_too_large", ["usage.completion_tokens is 800",
                                                               "more than the max_tokens 8"],
           output_file="{tmp}/bench.json"),
    server("usage-string", "usage_string", ["usage.completion_tokens is '8'", "a JSON string"]),
    server("usage-negative", "usage_negative", ["usage.completion_tokens is -5", "at least 1"]),
    server("usage-float", "usage_float", ["usage.completion_tokens is 8.5", "fraction"]),
    # per-request speculative metrics that lie: not used, the counters are, and the warning says why
    server("spec-metrics-lie", "spec_metrics_lie", ["per-request speculative metrics were not usable",
                                                    "num_spec_steps says", "/metrics counters"], outcome="ok"),
    server("spec-metrics-inflated", "spec_metrics_inflated", ["contradicts itself", "accepted_tokens"], outcome="ok"),
    server("stream-cut-after-4-chunks", "cut_stream", ["4 token chunk(s)", "closed the connection"]),
    server("stream-non-utf8", "stream_non_utf8", ["invalid UTF-8"]),
    server("stream-garbage-json", "malformed", ["a data message is not JSON"]),
    server("stream-error-event", "error_event", ["simulated error mid-stream"]),
    server("stream-without-usage", "no_usage", ["no usage chunk"]),
    server("completions-http-500", "http500", ["HTTP 500", "simulated engine failure"], output_file="{tmp}/bench.json"),
    server("completions-huge-error", "error_detail_huge", ["HTTP 500", "engine exploded", "characters)"]),
    server("metrics-nan", "metrics_nan", [], outcome="ok", output_file="{tmp}/bench.json"),
]

CASES = INPUTS + SERVERS
