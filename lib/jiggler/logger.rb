# frozen_string_literal: true

require "logger"
require "json"

module Jiggler
  # The default logger: one line per message with time, pid and level, on standard output. With `format: :json`
  # (or JIGGLER_LOG_FORMAT=json), one JSON object per line instead, with the job's fields (`event`, `class`, `jid`,
  # `queue`, `attempt`, and `duration` in milliseconds for a finished job) as keys beside `time`, `pid`, `level` and
  # `message`.
  module Logger
    FORMAT = "%s pid=%d %s: %s\n"
    # Job lines start with an event and the class, then the jid ("retry: InvoiceJob jid=...", "done InvoiceJob
    # jid=... in 1.2 ms"); then come key=value fields.
    EVENT = /\A(start|done|retry|dead|requeued):? (\S+) jid=/
    FIELD = /\b(jid|queue|attempt)=(\S+)/
    DURATION = /\A\S+ \S+ jid=\S+ in (\d+(?:\.\d+)?) ms\b/

    module_function

    # Whether JIGGLER_LOG_FORMAT asks for JSON lines.
    # @returns [Boolean]
    def json? = format_setting == :json

    # @parameter io [IO]
    # @parameter format [Symbol] :plain or :json.
    # @returns [::Logger]
    def build(io = $stdout, format: format_setting)
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
        duration = DURATION.match(text)
        line["duration"] = duration[1].to_f if duration
      end
      "#{JSON.generate(line)}\n"
    end

    def format_setting = ENV.fetch("JIGGLER_LOG_FORMAT", "plain").to_sym

    def text(message) = message.is_a?(Exception) ? "#{message.class}: #{message.message}" : message.to_s

    def timestamp(time) = time.utc.strftime("%Y-%m-%dT%H:%M:%S.%3NZ")
  end
end
