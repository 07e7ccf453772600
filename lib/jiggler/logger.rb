# frozen_string_literal: true

require "logger"
require "json"

module Jiggler
  # The default logger: one line per message with time, pid and level, on standard output. With `format: :json`
  # (or JIGGLER_LOG_FORMAT=json), one JSON object per line instead, with the job's fields (`event`, `class`, `jid`,
  # `queue`, `attempt`) as keys beside `time`, `pid`, `level` and `message`.
  module Logger
    FORMAT = "%s pid=%d %s: %s\n"
    # Job lines start with an event and the class ("retry: InvoiceJob jid=..."); then come key=value fields.
    EVENT = /\A(start|done|retry|dead): (\S+)/
    FIELD = /\b(jid|queue|attempt)=(\S+)/

    module_function

    # @parameter io [IO]
    # @parameter format [Symbol] :plain or :json.
    # @returns [::Logger]
    def build(io = $stdout, format: ENV.fetch("JIGGLER_LOG_FORMAT", "plain").to_sym)
      logger = ::Logger.new(io, level: ::Logger::INFO)
      logger.formatter = (format == :json) ? method(:format_json) : method(:format)
      logger
    end

    def format(severity, time, _program, message)
      Kernel.format(FORMAT, timestamp(time), Process.pid, severity, text(message))
    end

    def format_json(severity, time, _program, message)
      text = text(message)
      line = {"time" => timestamp(time), "pid" => Process.pid, "level" => severity, "message" => text}
      if (event = EVENT.match(text))
        line["event"], line["class"] = event.captures
        text.scan(FIELD) { |key, value| line[key] ||= value }
      end
      "#{JSON.generate(line)}\n"
    end

    def text(message) = message.is_a?(Exception) ? "#{message.class}: #{message.message}" : message.to_s

    def timestamp(time) = time.utc.strftime("%Y-%m-%dT%H:%M:%S.%3NZ")
  end
end
