# frozen_string_literal: true

require "json"
require_relative "error"

module Jiggler
  # The JSON form of a job as it is stored: written once at enqueue, parsed once when it runs.
  #
  # Only JSON-native arguments are allowed (nil, true, false, Integer, finite Float, String, and Arrays and Hashes with
  # String keys of these), so that what `perform` receives is exactly what was enqueued. Parsing is strict: untrusted
  # payloads never turn into arbitrary Ruby objects.
  module Payload
    # Raised when a stored payload is not a job jiggler can read.
    class MalformedError < Error; end

    # A coder of our own, so an app's global JSON options cannot change what jobs receive: it writes only JSON types
    # (strict), never builds objects from what it reads, and allows any nesting, as `check_args!` does.
    CODER = JSON::Coder.new(max_nesting: false)
    private_constant :CODER

    module_function

    # Checks that every argument is JSON-native.
    # @parameter job [String] the job's class name, for the message.
    # @parameter args [Array] the arguments.
    # @parameter list [Integer | Nil] the position of `args` in an enqueue_bulk call, for the message.
    # @raises [ArgumentError] naming the first argument that is not.
    def check_args!(job, args, list: nil)
      problem = nil
      index = args.index { |arg| problem = problem_with(arg) } or return
      where = list ? " in argument list #{list + 1}" : ""
      raise ArgumentError, "#{job} argument #{index + 1}#{where} (#{args[index].inspect[0, 100]}) is not JSON-native: " \
        "#{problem}. Use nil, true, false, Integer, finite Float, String, or Arrays and String-keyed Hashes of these."
    end

    # @parameter data [Hash | Array] a payload, or any value of JSON types.
    # @returns [String] its JSON.
    # @raises [JSON::GeneratorError] when it holds anything else.
    def dump(data)
      CODER.dump(data)
    end

    # Parses a stored job.
    # @parameter json [String]
    # @returns [Hash] with at least "jid", "name" and "args".
    # @raises [MalformedError] when it is not JSON or not a job.
    def load(json)
      data = parse(json)
      return data if data.is_a?(Hash) && data["name"].is_a?(String) && data["args"].is_a?(Array) && data["jid"].is_a?(String)
      raise MalformedError, "payload is not a jiggler job (needs jid, name and args): #{json.to_s[0, 200].inspect}"
    end

    # Parses JSON that jiggler stored (a job, a result), as strictly and exactly as jobs are read.
    # @raises [MalformedError] when it is not JSON.
    def parse(json)
      CODER.load(json)
    rescue JSON::ParserError, EncodingError, TypeError => error
      raise MalformedError, "payload is not valid JSON (#{error.message.lines.first&.strip}): #{json.to_s[0, 200].inspect}"
    end

    # Why a value is not JSON-native, or nil when it is. (Checked on every enqueue: the commonest types come first.)
    def problem_with(value)
      case value
      when String then utf8?(value) ? nil : "string is not valid UTF-8"
      when Integer, nil, true, false then nil
      when Float then value.finite? ? nil : "#{value} is not a finite number"
      when Array then array_problem(value)
      when Hash then hash_problem(value)
      else "#{value.class} is not a JSON type"
      end
    rescue EncodingError
      "string is not valid UTF-8"
    end

    def utf8?(string)
      return string.valid_encoding? if string.encoding == Encoding::UTF_8 || string.ascii_only?
      string.encode(Encoding::UTF_8).valid_encoding?
    end

    def array_problem(array)
      problem = nil
      array.any? { |item| problem = problem_with(item) }
      problem
    end

    def hash_problem(hash)
      hash.each do |key, item|
        return "Hash key #{key.inspect} is a #{key.class}, not a String" unless key.is_a?(String)
        return "Hash key #{key.inspect} is not valid UTF-8" unless utf8?(key)
        problem = problem_with(item)
        return problem if problem
      end
      nil
    end
  end
end
