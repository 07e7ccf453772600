# frozen_string_literal: true

require "securerandom"
require "time"
require_relative "payload"
require_relative "error"
require_relative "queue_name"
require_relative "job_payload"
require_relative "job/options"
require_relative "recurring_task/schedule"

module Jiggler
  # A job enqueued on a schedule, as declared in config/recurring.yml (Solid Queue's format) or `config[:recurring]`:
  #
  #   nightly_report:
  #     class: ReportJob
  #     args: [42, {"format" => "pdf"}]
  #     queue: reports
  #     schedule: every day at 3am Europe/Paris   # or a cron line: "0 3 * * * Europe/Paris"
  #
  # The class may be an Active Job class: its job then runs as Active Job runs one, with `args` read as Active Job's
  # serialized arguments (a record as `{"_aj_globalid" => "gid://app/Account/1"}`), its queue from `queue_as` unless
  # the task sets one, and its `jiggler_options` applied.
  #
  # The schedule is read by fugit: a cron line (with an optional seconds field and time zone) or an English phrase.
  # Without a zone, times are the server's local time (TZ). A tick is the epoch second a schedule fires at.
  class RecurringTask
    KEYS = %w[class args queue schedule description].freeze
    DEFAULT_SETTINGS =
      Job::Options::DEFAULTS.compact.transform_keys(&:to_s).freeze
    REFUSED = {
      "command" => "jiggler enqueues job classes: put the code in a job's " \
        "perform and name its class",
      "priority" => "jiggler orders work by queue: set queue instead"
    }.freeze
    # A task's name is shown and addressed by the dashboard (one URL path segment): printable UTF-8, not blank.
    NAME = /\A[[:print:]]{1,200}\z/
    NAME_RULE = "1 to 200 printable characters of valid UTF-8, not all spaces"
    # A job class's name, as Object.const_get takes it: "ReportJob", "Reports::NightlyJob".
    CLASS_NAME = /\A(::)?[A-Z]\w*(::[A-Z]\w*)*\z/

    attr_reader :name, :job, :args, :queue, :schedule, :description, :cron

    # Reads one task's settings.
    # @parameter name [String | Symbol] the task's name.
    # @parameter settings [Hash] class:, schedule:, and optionally args:, queue:, description: (String or Symbol keys).
    # @returns [RecurringTask]
    # @raises [Config::InvalidError] naming the task and what is wrong, in one line.
    def self.build(name, settings)
      unless settings.is_a?(Hash)
        raise Config::InvalidError,
          "recurring task #{name.to_s.inspect} must be a mapping of " \
          "class, schedule, args, queue"
      end
      new(name.to_s, settings.transform_keys(&:to_s))
    end

    # Reads back what `to_h` wrote (what the dashboard finds in the store).
    # @returns [Array(RecurringTask, Hash)] the task and its job's settings (see `job_settings`).
    def self.from_h(name, hash)
      [
        new(name, hash.except("job")),
        DEFAULT_SETTINGS.merge(hash.fetch("job", {}))
      ]
    end

    def initialize(name, settings)
      @name = name
      check_name
      check_keys(settings)
      @job = read_class(settings["class"])
      @args = read_args(settings["args"])
      @queue = read_queue(settings["queue"])
      @description = settings["description"]&.to_s
      @schedule = settings["schedule"].to_s
      @cron = parse(@schedule)
      freeze
    end

    # The latest tick at or before `now`. @returns [Integer] epoch seconds.
    def tick_at_or_before(now)
      @cron.previous_time(::Time.at(now.floor + 1)).to_i
    end

    # The first tick after `now`. @returns [Integer] epoch seconds.
    def tick_after(now) = @cron.next_time(::Time.at(now)).to_i

    # Enqueues the job for a tick, through the client middleware as every enqueue goes (Client): the chain may change
    # the job or stop it, and its innermost step is the store's atomic claim of the tick and push of the job (with
    # its lock, for a unique class). So a server that loses the claim runs the chain too; there `yield` returns false
    # (it returns whether the job was written).
    # @parameter store [Store::Redis | Store::SQLite]
    # @parameter settings [Hash] the job's settings (see `job_settings`).
    # @parameter tick [Integer | Nil] the tick it is enqueued for; nil for a run asked for by hand.
    # @parameter middleware [Middleware::Chain] the client middleware.
    # @returns [Boolean | Nil] whether the job was pushed (false: the tick was claimed already, the task is disabled,
    #   or a middleware stopped it; nil: the job of a unique class was not pushed because its lock is held).
    def enqueue(store, settings, tick, middleware:, now: ::Time.now.to_f)
      job = fields(settings, tick, now)
      write = lambda do
        if job["unique"].is_a?(Hash)
          unique = [
            job["unique"]["lock"], job["jid"], settings.dig("unique", "ttl")
          ]
        end
        store.enqueue_recurring(
          @name, tick, job["queue"], Payload.dump(job), now: now, unique: unique
        )
      end
      return write.call if middleware.empty?
      pushed = false
      middleware.invoke(job, job["queue"]) { pushed = write.call }
      pushed
    end

    # The queue the job goes to: the task's, else the class's. @parameter settings [Hash] see `job_settings`.
    def queue_for(settings) = @queue || settings["queue"]

    # What this task's jobs take from their class's options, worked out once since the arguments are fixed: queue,
    # retries, retry_queue, the "limits" field of a limited class and the lock of a unique one (its name, `until` and
    # ttl). JSON-ready: servers store it with the task, so the dashboard's Run now honours the class's limits and
    # lock without loading the class.
    # @parameter options [Hash] the job class's options.
    # @returns [Hash(String, Object)]
    # @raises [Config::InvalidError] when the class's key for its lock or limit fails on the task's arguments.
    def job_settings(options)
      settings = options
        .slice(:queue, :retries, :retry_queue, :wrapper)
        .compact
        .transform_keys(&:to_s)
      if options[:concurrency] || options[:rate]
        settings["limits"] = LimitedJob.field(@job, @args, options)
      end
      if (unique = options[:unique])
        settings["unique"] = {
          "lock" => UniqueJob.lock_key(@job, @args, unique),
          "until" => unique[:until].to_s,
          "ttl" => unique[:ttl]
        }
      end
      settings
    rescue => error # the user's key Proc
      invalid!(
        "has arguments its class's key cannot read: " \
        "#{error.class}: #{error.message.lines.first&.strip}"
      )
    end

    # The settings as stored for the dashboard (which may not load the class).
    # @parameter settings [Hash] the job's settings (see `job_settings`).
    # @returns [Hash(String, Object)]
    def to_h(settings)
      {
        "class" => @job,
        "args" => @args,
        "queue" => @queue,
        "schedule" => @schedule,
        "description" => @description,
        "job" => settings
      }.compact
    end

    private

    # The job as a payload Hash, marked with the task and its tick, with the "limits" and "unique" fields a client
    # would write.
    def fields(settings, tick, now)
      queue = queue_for(settings)
      if settings["unique"].is_a?(Hash)
        unique = settings["unique"].slice("lock", "until")
      end
      JobPayload.job(
        @args,
        JobPayload.fields(
          name: @job,
          queue: queue,
          retries: settings["retries"],
          created_at: now,
          retry_queue: settings["retry_queue"],
          limits: settings["limits"],
          unique: unique,
          recurring: {"task" => @name, "tick" => tick},
          **active_job(settings["wrapper"], queue, now),
          enqueued_at: now
        )
      )
    end

    def check_name
      readable = @name.valid_encoding? &&
        NAME.match?(@name) &&
        !@name.strip.empty?
      unless readable
        invalid!(
          "has a name the dashboard cannot show or address: write #{NAME_RULE}"
        )
      end
    end

    # An Active Job class's job (its options name the wrapper) is run by the wrapper as Active Job runs a job, with
    # the task's arguments as the serialized arguments (so `{"_aj_globalid" => "gid://app/Account/1"}` is a record).
    # @returns [Hash] the wrapper: and active_job: fields; none for a jiggler class (no wrapper).
    def active_job(wrapper, queue, now)
      return {} unless wrapper
      {
        wrapper: wrapper,
        active_job: {
          "job_class" => @job,
          "job_id" => SecureRandom.uuid,
          "queue_name" => queue,
          "executions" => 0,
          "exception_executions" => {},
          "enqueued_at" => ::Time.at(now).utc.iso8601(9)
        }
      }
    end

    def check_keys(settings)
      settings.each_key do |key|
        if REFUSED.key?(key)
          invalid!("has #{key}, which jiggler does not take: #{REFUSED[key]}")
        end
        unless KEYS.include?(key)
          invalid!(
            "has an unknown key #{key.inspect}; " \
            "known keys: #{KEYS.join(", ")}"
          )
        end
      end
    end

    def read_class(job)
      unless job.is_a?(String) && !job.empty?
        invalid!("needs class: the name of a job class")
      end
      return job if CLASS_NAME.match?(job)
      constant = job.split(/[^A-Za-z0-9]+/)
        .map { |word| word[0].upcase + word[1..] if word[0] }
        .join
      hint = (CLASS_NAME.match?(constant) && !job.include?(":")) ?
        ", such as #{constant.inspect}" :
        ""
      invalid!(
        "has class #{job.inspect}, which is not a class name: " \
        "write the job class's constant#{hint}"
      )
    end

    # nil: the class's queue.
    def read_queue(value)
      return if value.nil?
      queue = value.to_s
      return queue if QueueName.valid?(queue)
      invalid!("has queue #{queue.inspect}, which is not #{QueueName::RULE}")
    end

    # Solid Queue's rule: an Array is the argument list, anything else is the one argument.
    def read_args(value)
      args = value.is_a?(Array) ? value : [value].compact
      Payload.check_args!(@job, args)
      args
    rescue ArgumentError => error
      invalid!("has arguments that cannot be stored: #{error.message}")
    end

    def parse(schedule)
      invalid!("needs schedule: #{Schedule::ACCEPTED}") if schedule.strip.empty?
      Schedule.parse(schedule)
    rescue ArgumentError => error
      invalid!("has schedule #{schedule.inspect}, which #{error.message}")
    end

    def invalid!(reason)
      raise Config::InvalidError, "recurring task #{@name.inspect} #{reason}"
    end
  end
end
