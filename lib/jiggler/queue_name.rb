# frozen_string_literal: true

module Jiggler
  # What a queue name may be: printable UTF-8 without whitespace or control characters, and without '|' (it joins a
  # batch's queue and class) or braces (Redis hash tags); short enough for keys, logs and URLs. Every way a name comes
  # in (job options, with_options, settings, recurring tasks, the command line, YAML) asks `valid?`.
  module QueueName
    PATTERN = /\A[[:graph:]&&[^|{}]]{1,128}\z/
    RULE = "a queue name: 1 to 128 printable characters of valid UTF-8, " \
      "without spaces, '|' or braces"

    module_function

    # @parameter name [Object]
    def valid?(name)
      name.is_a?(String) &&
        name.valid_encoding? &&
        (name.encoding == Encoding::UTF_8 || name.ascii_only?) &&
        PATTERN.match?(name)
    end
  end
end
