# frozen_string_literal: true

require "logger"

module Jiggler
  # The default logger: one line per message with time, pid and level, on standard output.
  module Logger
    FORMAT = "%s pid=%d %s: %s\n"

    module_function

    # @returns [::Logger]
    def build(io = $stdout)
      logger = ::Logger.new(io, level: ::Logger::INFO)
      logger.formatter = method(:format)
      logger
    end

    def format(severity, time, _program, message)
      text = message.is_a?(Exception) ? "#{message.class}: #{message.message}" : message.to_s
      Kernel.format(FORMAT, time.utc.strftime("%Y-%m-%dT%H:%M:%S.%3NZ"), Process.pid, severity, text)
    end
  end
end
