# frozen_string_literal: true

require "logger"
require "json"

module Jiggler
  # The default logger: one line per message with time, pid and level, on standard output. With `format: :json` (the
  # `log_format` setting, or JIGGLER_LOG_FORMAT=json), one JSON object per line instead, with the job's fields (`event`,
  # `class`, `jid`, `queue`, `attempt`, and `duration` in milliseconds for a finished job) as keys beside `time`, `pid`,
  # `level` and `message`.
  module Logger
    FORMAT = "%s pid=%d %s: %s\n"
    # The formats of the `log_format` setting.
    FORMATS = %i[plain json].freeze
    # Job lines start with an event and the class, then the jid ("retry: InvoiceJob jid=...", "done InvoiceJob
    # jid=... in 1.2 ms"); then come key=value fields.
    EVENT = /\A(start|done|retry|dead|requeued):? (\S+) jid=/
    FIELD = /\b(jid|queue|attempt)=(\S+)/
    DURATION = /\A\S+ \S+ jid=\S+ in (\d+(?:\.\d+)?) ms\b/

    module_function

    # @parameter io [IO]
    # @parameter format [Symbol] one of FORMATS.
    # @returns [::Logger]
    def build(io = $stdout, format: :plain)
      ::Logger.new(io, level: ::Logger::INFO, formatter: formatter(format))
    end

    # Gives a logger this module built the formatter of `format`; any other logger (the app's own) is left as it is.
    # @parameter logger [::Logger | Object]
    # @parameter format [Symbol] one of FORMATS.
    # @returns [Object] the logger.
    def reformat(logger, format)
      if logger.is_a?(::Logger) && ours?(logger.formatter)
        logger.formatter = formatter(format)
      end
      logger
    end

    def format(severity, time, _program, message)
      Kernel.format(
        FORMAT, timestamp(time), Process.pid, severity, text(message)
      )
    end

    def format_json(severity, time, _program, message)
      text = text(message)
      line = {
        "time" => timestamp(time),
        "pid" => Process.pid,
        "level" => severity,
        "message" => text
      }
      if (event = EVENT.match(text))
        line["event"], line["class"] = event.captures
        text.scan(FIELD) { |key, value| line[key] ||= value }
        duration = DURATION.match(text)
        line["duration"] = duration[1].to_f if duration
      end
      "#{JSON.generate(line)}\n"
    end

    def formatter(format)
      (format == :json) ? method(:format_json) : method(:format)
    end

    def ours?(formatter) = formatter.is_a?(Method) && formatter.receiver == self

    def text(message)
      message.is_a?(Exception) ?
        "#{message.class}: #{message.message}" :
        message.to_s
    end

    def timestamp(time) = time.utc.strftime("%Y-%m-%dT%H:%M:%S.%3NZ")
  end
end
