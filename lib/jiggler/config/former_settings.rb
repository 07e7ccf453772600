# frozen_string_literal: true

module Jiggler
  class Config
    # Settings of jiggler 0.1.0 that were renamed or have gone, so that its config files and `configure` blocks keep
    # working: a renamed setting is applied under its new name with a one-line deprecation warning; a setting that no
    # longer exists is ignored with a one-line warning saying why.
    module FormerSettings
      RENAMED = {
        max_dead_jobs: :dead_max_jobs,
        # the name 0.1.0's README gives client_async
        async_client: :client_async,
        dead_timeout_in_seconds: :dead_timeout
      }.freeze

      # 0.1.0's `guaranteed_execution: false` is `mode: :at_most_once`.
      GUARANTEED_EXECUTION = {
        true => :at_least_once,
        false => :at_most_once
      }.freeze

      REMOVED = {
        stats_enabled: "statistics are always kept",
        fetchers_concurrency:
          "one fetcher per process takes jobs from every queue in batches",
        in_process_interval:
          "the jobs of a process that died are back in their queues " \
          "within recovery_timeout",
        redis_mode:
          "the server is always async; set client_async for the client",
        redis_pool: "set client_redis_pool for the client's pool",
        strict: "queues of equal priority are served in the order listed",
        verbose: "pass -v to the jiggler command"
      }.freeze

      module_function

      # A setting under its current name.
      # @parameter key [Symbol]
      # @returns [Array(Symbol, Object) | Nil] the current key and value, or nil for a setting that has gone.
      def translate(key, value)
        if RENAMED.key?(key)
          deprecated(
            "config[:#{key}] is deprecated; use config[:#{RENAMED[key]}]"
          )
          [RENAMED[key], value]
        elsif REMOVED.key?(key)
          deprecated(
            "config[:#{key}] (jiggler 0.1.0) no longer exists " \
            "and is ignored: #{REMOVED[key]}"
          )
        elsif key == :guaranteed_execution
          guaranteed_execution(value)
        else
          [key, value]
        end
      end

      def guaranteed_execution(value)
        mode = GUARANTEED_EXECUTION.fetch(value) do
          raise InvalidError,
            "config[:guaranteed_execution] must be true or false " \
            "(got #{value.inspect})"
        end
        deprecated(
          "config[:guaranteed_execution] is deprecated; " \
          "use config[:mode] = #{mode.inspect}"
        )
        [:mode, mode]
      end

      # Whether a key is one of jiggler 0.1.0's settings that were renamed or have gone.
      def known?(key)
        RENAMED.key?(key) || REMOVED.key?(key) || key == :guaranteed_execution
      end

      # The current name of a renamed setting. @returns [Symbol | Nil]
      def current_name(key) = RENAMED[key]

      def deprecated(message) = Kernel.warn("jiggler: #{message}")
    end
  end
end
