# frozen_string_literal: true

require "securerandom"
require_relative "error"
require_relative "job"
require_relative "payload"
require_relative "job_payload"
require_relative "workflow/group"

module Jiggler
  # Jobs with dependencies: a step runs once every step it waits for (`after:`) has succeeded, and may read their
  # return values (Job#dependency_results). Groups gather steps, nest, and take an `on_success` callback: a step
  # that waits for every step of its group to succeed, and an `on_complete` callback: a job that waits for every step
  # of its group to end, succeeded or not. The whole graph is written in one atomic store step by `start`.
  #
  #   flow = Jiggler::Workflow.new
  #   parts = [1, 2, 3].map { |n| flow.step(FetchPart, n) }      # fan-out
  #   merged = flow.step(MergeParts, after: parts)                # fan-in
  #   flow.on_success(Notify, "all done")                         # after every step succeeded
  #   flow.on_complete(Report)                                    # after every step ended, succeeded or not
  #   flow.start
  #
  # A step's completion is one atomic store step with its acknowledgement, idempotent by jid: a step performed
  # twice (its process killed after it returned) counts once, so each dependant, callbacks included, is queued
  # once. A step that fails is retried as any job; its dependants wait for it, and a dead step holds them until
  # it is retried from the dead set and succeeds (or the workflow is left unfinished). A step's death ends it and,
  # in the same atomic store step, every step that waits for it, directly or not (they are blocked): the on_complete
  # callbacks of their groups count them as ended, once, whatever happens to them later.
  class Workflow
    # Raised for a graph that cannot run: a cycle, an unknown dependency, a class that is not a job.
    class InvalidError < Error; end

    # How long a finished workflow's state (steps, results) is kept, in seconds.
    RETENTION = 86_400

    # @returns [String] the workflow's id, named in each step's payload ("workflow").
    attr_reader :id

    # @parameter client [Client | Nil] the client to write through; nil: `Jiggler.client` at `start`.
    def initialize(client: nil)
      @id = "wf-#{SecureRandom.hex(10)}"
      @client = client
      @steps = {}
      @started = false
      @root = Group.new(self)
    end

    # Adds a step (see Group#step). @returns [String] its jid.
    def step(klass, *args, after: []) = @root.step(klass, *args, after: after)

    # A nested group (see Group#group). @returns [Group]
    def group(&) = @root.group(&)

    # The workflow's callback, after every step (see Group#on_success). @returns [String] its jid.
    def on_success(klass, *args) = @root.on_success(klass, *args)

    # The workflow's completion callback, after every step ended (see Group#on_complete). @returns [String] its jid.
    def on_complete(klass, *args) = @root.on_complete(klass, *args)

    # A job enqueued once, when the first step of the workflow dies (goes to the dead set, its retries spent). It is
    # not a step: no step waits for it, and it does not run if no step dies.
    # @returns [String] the callback job's jid.
    # @raises [InvalidError] for a class that cannot be a step, or a second on_death.
    def on_death(klass, *args)
      raise InvalidError, "workflow #{@id} was already started" if @started
      if @on_death
        raise InvalidError, "workflow #{@id} already has its on_death callback"
      end
      check_class!(klass)
      Payload.check_args!(klass.name, args)
      @on_death = {
        jid: SecureRandom.hex(12),
        klass: klass,
        args: args,
        after: [],
        queue: klass.job_options[:queue]
      }
      @on_death[:jid]
    end

    # Writes every step in one atomic step: those without dependencies go to their queues, the others wait.
    # @returns [String] the workflow's id.
    # @raises [InvalidError] for an empty workflow, a cycle, or one started twice.
    def start
      raise InvalidError, "workflow #{@id} was already started" if @started
      raise InvalidError, "workflow #{@id} has no steps" if @steps.empty?
      check_acyclic!
      client = @client || Jiggler.client
      dependants = Hash.new { |hash, jid| hash[jid] = [] }
      @steps.each_value do |step|
        step[:after].each { |dep| dependants[dep] << step[:jid] }
      end
      callbacks = completion_callbacks
      now = Time.now.to_f
      rows = @steps.each_value.map do |step|
        waiting = step[:members] ? step[:members].size : step[:after].size
        [
          step[:jid],
          step[:queue],
          payload(client, step, now),
          waiting,
          dependants.fetch(step[:jid], []),
          callbacks.fetch(step[:jid], [])
        ]
      end
      death = @on_death &&
        [@on_death[:queue], payload(client, @on_death, now, member: false)]
      client.store.create_workflow(@id, rows, on_death: death)
      @started = true
      @id
    end

    # The steps, for inspection: jid => {class, args, after, queue}.
    # @returns [Hash]
    def steps
      @steps.transform_values do |step|
        step.slice(:klass, :args, :after, :queue)
      end
    end

    # Records a step (Group#step calls this). @returns [String] its jid.
    def add(klass, args, after)
      raise InvalidError, "workflow #{@id} was already started" if @started
      check_class!(klass)
      Payload.check_args!(klass.name, args)
      after.each do |dep|
        unless @steps.key?(dep)
          raise InvalidError,
            "unknown dependency #{dep.inspect} for a step of #{klass}"
        end
        if @steps[dep][:group]
          raise InvalidError,
            "a step cannot wait for an on_complete callback (#{dep})"
        end
      end
      jid = SecureRandom.hex(12)
      @steps[jid] = {
        jid: jid,
        klass: klass,
        args: args,
        after: after.uniq,
        queue: klass.job_options[:queue]
      }
      jid
    end

    # Records a group's on_complete callback (Group#on_complete calls this): a step waiting for no step to succeed,
    # released once every member of its group ended. @returns [String] its jid.
    def add_completion(klass, args, group)
      jid = add(klass, args, [])
      @steps[jid][:group] = group
      jid
    end

    private

    # The on_complete callbacks each step counts for (read at start, when every group is complete); each callback
    # notes its members, for its payload and its count.
    # @returns [Hash(String, Array(String))] jid => callbacks' jids.
    def completion_callbacks
      callbacks = Hash.new { |hash, jid| hash[jid] = [] }
      @steps.each_value do |step|
        next unless step[:group]
        step[:members] = step[:group].members
        step[:members].each { |member| callbacks[member] << step[:jid] }
      end
      callbacks
    end

    def check_class!(klass)
      unless klass.is_a?(Class) && klass.include?(Job) && klass.name
        raise InvalidError,
          "a workflow step must be a named Jiggler::Job class " \
          "(got #{klass.inspect})"
      end
      options = klass.job_options
      return unless options[:batch_size] || options[:unique]
      raise InvalidError,
        "#{klass} sets #{options[:batch_size] ? "batch_size" : "unique"}, " \
        "which a workflow step cannot have"
    end

    # A step's payload; the on_death callback's (`member: false`) names no workflow, so it is acknowledged as any job.
    # An on_complete callback's is marked so (Job#workflow_outcome); it does not list its members: a step's row is
    # rewritten at each of their ends (SQLite), and the store's graph names them.
    def payload(client, step, now, member: true)
      job = client.build(
        step[:klass].name, [step[:args]], step[:klass].job_options, nil
      ).first
      Payload.dump(
        JobPayload.changed(
          job,
          jid: step[:jid],
          workflow: (@id if member),
          after: (step[:after] unless step[:after].empty?),
          on_complete: (true if step[:members]),
          enqueued_at: now
        )
      )
    end

    # Steps only name steps made before them, so a cycle cannot be built through this API; the check guards the
    # graph anyway (Kahn's algorithm), for a step list edited by hand.
    def check_acyclic!
      waiting = @steps.transform_values { |step| step[:after].size }
      dependants = Hash.new { |hash, jid| hash[jid] = [] }
      @steps.each_value do |step|
        step[:after].each { |dep| dependants[dep] << step[:jid] }
      end
      ready = waiting.select { |_, count| count.zero? }.keys
      until ready.empty?
        jid = ready.pop
        dependants[jid].each do |dependant|
          ready << dependant if (waiting[dependant] -= 1).zero?
        end
        waiting.delete(jid)
      end
      unless waiting.empty?
        raise InvalidError,
          "workflow #{@id} has a cycle through " \
          "#{waiting.keys.first(3).join(", ")}"
      end
    end
  end
end
