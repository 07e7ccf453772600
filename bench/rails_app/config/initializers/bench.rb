# frozen_string_literal: true

# The harness's jobs (BenchDone marks the first start and the last finish; BenchNoopJob is the native noop).
require ENV.fetch("BENCH_JOBS_FILE")
