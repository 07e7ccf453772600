# frozen_string_literal: true

require "json"
require_relative "error"

module Jiggler
  # The JSON form of a job as it is stored: written once at enqueue, parsed once when it runs.
  #
  # Only JSON-native arguments are allowed (nil, true, false, Integer, finite Float, String, and Arrays and Hashes with
  # String keys of these, nested at most NESTING_LIMIT deep), so that what `perform` receives is exactly what was
  # enqueued. Parsing is strict: untrusted payloads never turn into arbitrary Ruby objects.
  module Payload
    # Raised when a stored payload is not a job jiggler can read.
    class MalformedError < Error; end

    # How many Arrays and Hashes deep an argument may nest (`[[1]]` is 2). Deeper data would exhaust a fiber's stack
    # when it is checked, written or read (a fiber has room for about 300 levels of checking), so it is refused at
    # enqueue and a stored payload nested deeper is unreadable.
    NESTING_LIMIT = 100

    # Coders of our own, so an app's global JSON options cannot change what jobs receive. The writer writes only JSON
    # types (strict); subclasses of Hash, Array and String (a Rails HashWithIndifferentAccess or SafeBuffer) are
    # written as the plain values they are. The reader never builds objects from what it reads, and stops at the
    # nesting a job may have: its Hash, its args Array, then NESTING_LIMIT levels of arguments.
    WRITER = JSON::Coder.new(max_nesting: false) do |value|
      case value
      when Hash then {}.merge!(value)
      when Array then Array.new(value)
      when String then String.new(value)
      else raise JSON::GeneratorError, "#{value.class} not allowed in JSON"
      end
    end
    READER = JSON::Coder.new(max_nesting: NESTING_LIMIT + 2)
    private_constant :WRITER, :READER

    module_function

    # Checks that every argument is JSON-native.
    # @parameter job [String] the job's class name, for the message.
    # @parameter args [Array] the arguments.
    # @parameter list [Integer | Nil] the position of `args` in an enqueue_bulk call, for the message.
    # @raises [ArgumentError] naming the first argument that is not.
    def check_args!(job, args, list: nil)
      problem = nil
      index = args.index { |arg| problem = problem_with(arg, 0) } or return
      where = list ? " in argument list #{list + 1}" : ""
      raise ArgumentError,
        "#{job} argument #{index + 1}#{where} (#{preview(args[index])}) " \
        "is not JSON-native: #{problem}. Use nil, true, false, Integer, " \
        "finite Float, String, or Arrays and String-keyed Hashes of these " \
        "(nested at most #{NESTING_LIMIT} deep)."
    end

    # @parameter data [Hash | Array] a payload, or any value of JSON types.
    # @returns [String] its JSON.
    # @raises [JSON::GeneratorError] when it holds anything else.
    def dump(data)
      WRITER.dump(data)
    end

    # Parses a stored job.
    # @parameter json [String]
    # @returns [Hash] with at least "jid", "name" and "args".
    # @raises [MalformedError] when it is not JSON or not a job.
    def load(json)
      data = parse(json)
      if data.is_a?(Hash) &&
          data["name"].is_a?(String) &&
          data["args"].is_a?(Array) &&
          data["jid"].is_a?(String)
        return data
      end
      raise MalformedError,
        "payload is not a jiggler job (needs jid, name and args): " \
        "#{json.to_s[0, 200].inspect}"
    end

    # Parses JSON that jiggler stored (a job, a result), as strictly and exactly as jobs are read.
    # @raises [MalformedError] when it is not JSON, or nests deeper than a job may.
    def parse(json)
      READER.load(json)
    rescue JSON::NestingError
      raise MalformedError,
        "payload nests deeper than #{NESTING_LIMIT} levels of arguments " \
        "(Jiggler::Payload::NESTING_LIMIT): #{json.to_s[0, 200].inspect}"
    rescue JSON::ParserError, EncodingError, TypeError => error
      raise MalformedError,
        "payload is not valid JSON (#{error.message.lines.first&.strip}): " \
        "#{json.to_s[0, 200].inspect}"
    end

    # Why a value is not JSON-native, or nil when it is. (Checked on every enqueue: the commonest types come first.)
    # @parameter depth [Integer] how many Arrays and Hashes hold the value.
    def problem_with(value, depth = 0)
      case value
      when String then utf8?(value) ? nil : "string is not valid UTF-8"
      when Integer, nil, true, false then nil
      when Float then value.finite? ? nil : "#{value} is not a finite number"
      when Array then too_deep(depth) || array_problem(value, depth + 1)
      when Hash then too_deep(depth) || hash_problem(value, depth + 1)
      else "#{value.class} is not a JSON type"
      end
    rescue EncodingError
      "string is not valid UTF-8"
    end

    def too_deep(depth)
      if depth >= NESTING_LIMIT
        "it nests deeper than #{NESTING_LIMIT} Arrays and Hashes " \
        "(Jiggler::Payload::NESTING_LIMIT)"
      end
    end

    # A value's start for a message.
    def preview(value)
      value.inspect[0, 100]
    rescue SystemStackError # data nested too deep to inspect on a fiber's stack
      "#{value.class} of #{value.size}"
    end

    def utf8?(string)
      if string.encoding == Encoding::UTF_8 || string.ascii_only?
        return string.valid_encoding?
      end
      string.encode(Encoding::UTF_8).valid_encoding?
    end

    def array_problem(array, depth)
      problem = nil
      array.any? { |item| problem = problem_with(item, depth) }
      problem
    end

    def hash_problem(hash, depth)
      hash.each do |key, item|
        unless key.is_a?(String)
          return "Hash key #{key.inspect} is a #{key.class}, not a String"
        end
        return "Hash key #{key.inspect} is not valid UTF-8" unless utf8?(key)
        problem = problem_with(item, depth)
        return problem if problem
      end
      nil
    end
  end
end
