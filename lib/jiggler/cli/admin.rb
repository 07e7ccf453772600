# frozen_string_literal: true

require "optparse"
require "socket"
require_relative "../cli"
require_relative "../web/stats"
require_relative "../set_actions"
require_relative "../cancellation"
require_relative "../job_status"
require_relative "admin_text"
require_relative "probe"
require_relative "../display"
require_relative "../config/sqlite_path"

module Jiggler
  class CLI
    # The admin commands (`jiggler status`, `queues`, `pause`, ...): they read and change jobs through the same store
    # read and admin methods as the dashboard (Web::Stats for the numbers), print a table, or JSON with `--json`, and
    # exit 0, or 1 after a one-line error, as the server does.
    class Admin
      # Raised for a command line that names no known command, set or process; printed as one line.
      class UsageError < Error; end

      SETS = {
        "scheduled" => :scheduled,
        "retries" => :retry,
        "retry" => :retry,
        "dead" => :dead
      }.freeze
      SET_ACTIONS = {
        "retry" => :run,
        "kill" => :kill,
        "delete" => :delete
      }.freeze
      USAGE = <<~TEXT
        Usage: jiggler COMMAND [options]
          status                       processes, queues with size and latency, set sizes and counters
          status --probe [-q QUEUE]    a health check: exit 1 unless a live server works each queue given
                                       (with none given: unless a live server runs), 0 if one does
          queues                       every queue with its size, latency and state
          pause QUEUE | resume QUEUE   stop or restart fetching from a queue
          clear QUEUE                  delete a queue's jobs
          retry SET [--class NAME]     move the jobs of a set (scheduled, retries, dead) to their queues now
          kill SET [--class NAME]      move the jobs of the scheduled or retries set to the dead set
          delete SET [--class NAME]    delete the jobs of a set
          quiet PROCESS | stop PROCESS ask a server (by identity, name, hostname or hostname:pid) to stop fetching,
                                       or to finish its jobs and exit; it acts at its next heartbeat
          cancel JID                   cancel a job: taken out if it waits, stopped at once if it runs; it ends
                                       in the dead set, marked cancelled
          job JID                      where a job is now (Jiggler.status): queued, waiting, running with its
                                       progress, scheduled, retry, dead, cancelled, done or failed
          workflow ID                  a workflow's steps by state, and the jids of those dead or blocked
      TEXT

      # Runs one command.
      # @parameter argv [Array(String)] the command and its arguments.
      # @returns [Integer] the exit status.
      def run(argv)
        options, args = parse(argv)
        return 0 unless options
        command, *operands = args
        if options[:probe] && command != "status"
          raise UsageError, "--probe goes with status: jiggler status --probe"
        end
        arguments = operands_for(command, operands, options)
        configure(options)
        result = Display.data(public_send(:"#{command}_command", *arguments))
        result = probe(result, options[:queues] || []) if options[:probe]
        puts(
          options[:json] ?
            Payload.dump(result) :
            AdminText.render(command, result)
        )
        (result["ok"] == false) ? 1 : 0
      rescue UsageError, Config::InvalidError, OptionParser::ParseError,
        Store::ConnectionError => error
        # a Redis URL may carry a password
        warn("jiggler: #{Config::Rules.redact(error.message)}")
        1
      end

      # @returns [Hash] the counters and set sizes, the live processes and the queues.
      def status_command
        stats = Web::Stats.new(store)
        counts = stats.to_h.slice(
          "processed", "failures", "enqueued", "busy",
          "scheduled", "retry", "dead"
        )
        processes = stats.processes.map { |id, info| process_row(id, info) }
        {
          "store" => store_name,
          "counts" => counts,
          "processes" => processes,
          "queues" => stats.queues
        }
      end

      # @returns [Hash] every queue that holds jobs or is paused.
      def queues_command
        {"store" => store_name, "queues" => Web::Stats.new(store).queues}
      end

      def pause_command(queue)
        store.pause_queue(queue)
        {"queue" => queue, "paused" => true}
      end

      def resume_command(queue)
        store.resume_queue(queue)
        {"queue" => queue, "paused" => false}
      end

      def clear_command(queue)
        store.clear_queue(queue)
        {"queue" => queue, "cleared" => true}
      end

      # Moves jobs of a set to their queues. @returns [Hash] the set, the class and how many.
      def retry_command(set, name) = sweep("retry", set, name)

      # Moves jobs of the scheduled or retry set to the dead set.
      def kill_command(set, name)
        if set == :dead
          raise UsageError,
            "kill takes the scheduled or retries set, not dead (use delete)"
        end
        sweep("kill", set, name)
      end

      def delete_command(set, name) = sweep("delete", set, name)

      # Asks the matching processes to stop fetching. @returns [Hash] the request and the processes it went to.
      def quiet_command(target) = signal("quiet", target)

      # Asks the matching processes to finish their jobs and exit.
      def stop_command(target) = signal("stop", target)

      # Cancels a job wherever it is (Jiggler::Cancellation), recorded as cancelled by this command.
      # @returns [Hash] the jid and "removed" (it was waiting) or "requested" (running, or not found waiting).
      def cancel_command(jid)
        result = Cancellation.cancel(
          store,
          jid,
          by: "jiggler cancel (#{ENV.fetch("USER", "?")}@#{Socket.gethostname})"
        )
        {"jid" => jid, "result" => result.to_s}
      end

      # Where a job is now. @returns [Hash] Jiggler.status's answer, with the jid.
      def job_command(jid) = {"jid" => jid}.merge(JobStatus.lookup(store, jid))

      # A workflow's steps by state (Store::StepState).
      # @returns [Hash] "workflow", "states" (state => count), "dead" and "blocked" (their jids).
      # @raises [UsageError] for a workflow the store does not know (finished long ago, or never started).
      def workflow_command(id)
        steps = store.workflow_steps(id)
        if steps.empty?
          raise UsageError,
            "no workflow #{id.inspect} in #{store_name} " \
            "(finished and expired, or never started)"
        end
        by_state = steps.keys.group_by { |jid| steps[jid] }
        {
          "workflow" => id,
          "states" => by_state.transform_values(&:size).sort.to_h,
          "dead" => by_state.fetch("dead", []),
          "blocked" => by_state.fetch("blocked", [])
        }
      end

      private

      def store = Jiggler.store

      # The store read, named for the output: the SQLite file, or the Redis URL without its credentials.
      def store_name = Config::Rules.redact(store.description)

      # Replaces the status with the probe's verdict on it (see Probe).
      def probe(status, queues)
        Probe.new(Web::Stats.new(store).processes, queues)
          .to_h
          .merge("store" => status["store"])
      end

      def parse(argv)
        options = {}
        args = OptionParser.new do |opts|
          opts.banner = USAGE
          opts.separator("Options:")
          opts.on("--json", "print JSON instead of tables") do
            options[:json] = true
          end
          opts.on(
            "--class NAME",
            "only the jobs of this class (retry, kill, delete)"
          ) do |v|
            options[:class] = v
          end
          opts.on(
            "--probe",
            "status: exit 1 unless a live server works the -q queues " \
            "(a health check)"
          ) do
            options[:probe] = true
          end
          opts.on(
            "-q",
            "--queue QUEUE1,QUEUE2",
            "with --probe: queues a live server must work (repeat -q for more)"
          ) do |v|
            # a -q critical,10 of the server's
            (options[:queues] ||= []).concat(v.split(",").grep_v(INTEGER))
          end
          opts.on(
            "-r",
            "--require PATH",
            "file that configures jiggler (Jiggler.configure ...), " \
            "or a Rails app directory"
          ) do |v|
            options[:require] = v
          end
          opts.on(
            "-C",
            "--config PATH",
            "YAML config file (default #{DEFAULT_CONFIG_FILE} if present)"
          ) do |v|
            options[:config_file] = v
          end
          opts.on(
            "-e",
            "--environment ENV",
            "environment section of the config file"
          ) do |v|
            options[:environment] = v
          end
          opts.on("-h", "--help", "print this help") do
            puts opts
            return nil
          end
        end.parse(argv)
        [options, args]
      end

      # The arguments a command's method takes, checked.
      def operands_for(command, operands, options)
        case command
        when "status", "queues" then expect(command, operands, [])
        when "pause", "resume", "clear"
          queue_named(command, expect(command, operands, ["QUEUE"]))
        when "quiet", "stop" then expect(command, operands, ["PROCESS"])
        when "cancel", "job" then expect(command, operands, ["JID"])
        when "workflow" then expect(command, operands, ["ID"])
        else
          [
            set_named(expect(command, operands, ["SET"]).first),
            options[:class]
          ]
        end
      end

      def expect(command, operands, names)
        return operands if operands.size == names.size
        raise UsageError,
          "#{command} takes " \
          "#{names.empty? ? "no arguments" : names.join(" ")} " \
          "(got #{operands.size}); see jiggler #{command} -h"
      end

      # A queue name the dashboard can also show and act on (QueueName.valid?).
      def queue_named(command, operands)
        return operands if QueueName.valid?(operands.first)
        raise UsageError,
          "#{command} #{operands.first.inspect}: not #{QueueName::RULE}"
      end

      def set_named(name)
        SETS.fetch(name) do
          raise UsageError,
            "unknown set #{name.inspect}; use scheduled, retries or dead"
        end
      end

      # Applies the server's config file and `-r` file, so the command sees the store the servers use.
      def configure(options)
        config = Jiggler.config
        if options[:environment]
          config.apply_flags(environment: options[:environment])
        end
        path = options[:config_file] ||
          (DEFAULT_CONFIG_FILE if ::File.exist?(DEFAULT_CONFIG_FILE))
        if path
          config.apply_file(Config::YAMLFile.load(path, config[:environment]))
        end
        load_file(options[:require]) if options[:require]
        check_sqlite_file(config)
      end

      # Opening a missing SQLite file would create an empty store: the command would read or change nothing the
      # servers see, and leave a stray file.
      def check_sqlite_file(config)
        return unless config.store_kind == :sqlite
        path = config[:sqlite_path].to_s
        return if ::File.exist?(path) || Config::SQLitePath.in_memory?(path)
        raise UsageError,
          "no store file exists at #{path} " \
          "(sqlite_path or JIGGLER_SQLITE_PATH); " \
          "point it at the file your servers use, or set REDIS_URL"
      end

      # Loads the `-r` file; for a Rails app (`-r .`), config/environment.rb, as the server does, without eager loading.
      def load_file(path)
        file = ::File.directory?(path) ?
          ::File.join(path, "config", "environment.rb") :
          path
        unless ::File.file?(file)
          raise UsageError, "cannot load #{file}: no such file"
        end
        Rails::Boot.require_app(
          ::File.expand_path(file), Jiggler.config, eager_load: false
        )
      rescue ScriptError, StandardError => error
        raise if error.is_a?(UsageError)
        raise UsageError,
          "#{file} failed to load: #{error.class}: " \
          "#{error.message.lines.first&.strip}"
      end

      def sweep(command, set, name)
        count = SetActions.sweep(
          store, set, SET_ACTIONS.fetch(command), name: name
        )
        {
          "set" => SETS.key(set).then do |key|
            (key == "retry") ? "retries" : key
          end,
          "class" => name,
          "count" => count
        }
      end

      def signal(request, target)
        matches = Web::Stats.new(store).processes.select do |id, info|
          names_of(id, info).include?(target)
        end
        if matches.empty?
          raise UsageError,
            "no live process is #{target.inspect} (see jiggler status)"
        end
        matches.each { |id, _| store.signal_process(id, request) }
        {
          "signal" => request,
          "processes" => matches.map { |id, info| process_row(id, info) }
        }
      end

      # The ways a process may be named on the command line.
      def names_of(id, info)
        [
          id,
          info["name"],
          info["hostname"],
          "#{info["hostname"]}:#{info["pid"]}"
        ]
      end

      # A process as the commands show it; fields of unexpected types (a forged or foreign heartbeat) read as 0 or nil.
      def process_row(id, info)
        running = info["current_jobs"].is_a?(Hash) ?
          info["current_jobs"].size :
          0
        {
          "id" => id,
          "host" => "#{info["hostname"]}:#{info["pid"]}",
          "busy" => running,
          "concurrency" => whole(info["concurrency"]),
          "queues" => info["queues"],
          "quiet" => info["quiet"] == true,
          "heartbeat" => Display.number(info["heartbeat"]),
          "started_at" => whole(info["started_at"])
        }
      end

      # A finite number, or a String of one, as an Integer; 0 for anything else.
      def whole(value)
        number = value.is_a?(String) ? Float(value, exception: false) : value
        Display.number(number)&.to_i || 0
      end
    end
  end
end
