# frozen_string_literal: true

require_relative "router"
require_relative "stats"
require_relative "entry"
require_relative "filter"
require_relative "assets"
require_relative "recurring_routes"
require_relative "../set_actions"
require_relative "../store/contract"
require_relative "prometheus"
require_relative "chart"
require_relative "workflow_graph"
require_relative "../metrics/report"
require_relative "../unique_job"
require_relative "../cancellation"

module Jiggler
  class Web
    # The dashboard's pages and actions, drawn on a Router. Each block runs on an Action. Every state change is a POST,
    # checked for its CSRF token before its block runs, that ends with a redirect to a page.
    module Routes
      # URL names of the sorted sets, and the store's names for them.
      SETS = {
        "scheduled" => :scheduled,
        "retries" => :retry,
        "dead" => :dead
      }.freeze
      PER_PAGE = 25
      # Who a job cancelled on the dashboard was cancelled by.
      CANCELLED_BY = "dashboard"
      # The periods the Metrics page offers, in hours.
      METRIC_HOURS = [1, 3, 8, 24].freeze
      # How the Metrics page can order its classes: by name, or the largest first.
      METRIC_ORDERS = {
        "total" => ->(row) { -row.seconds },
        "failures" => ->(row) { -row.failed },
        "p95" => ->(row) { -row.p95.to_f },
        "name" => ->(row) { row.name }
      }.freeze

      # @returns [Router]
      def self.draw(router = Router.new)
        pages(router)
        queue_actions(router)
        process_actions(router)
        # before the sets' "/:set", which would take "/recurring"
        RecurringRoutes.draw(router)
        set_pages(router)
        set_actions(router)
        router
      end

      def self.pages(router)
        router.get("/") { erb(:dashboard, locals: {stats: Stats.new(store)}) }
        router.get("/stats") { json(Stats.new(store).to_h) }
        router.get("/metrics") { Prometheus.response(store) }
        router.get("/classes") do
          hours = Integer(param("hours"), 10, exception: false)
          hours = 1 unless METRIC_HOURS.include?(hours)
          sort = METRIC_ORDERS.key?(param("sort")) ? param("sort") : "total"
          report = Metrics::Report.new(store, minutes: hours * 60)
          report.rows.sort_by!(&METRIC_ORDERS.fetch(sort))
          erb(:classes, locals: {report: report, hours: hours, sort: sort})
        end
        router.get("/busy") do
          erb(:busy, locals: {stats: Stats.new(store)})
        end
        router.get("/queues") do
          erb(:queues, locals: {stats: Stats.new(store)})
        end
        router.get("/assets/:file") do
          Assets.response(route_params["file"]) || not_found
        end
        router.get("/workflows/:id") do
          id = route_params["id"]
          graph = WorkflowGraph.new(store.workflow_graph(id))
          erb(
            :workflow,
            status: graph.nodes.empty? ? 404 : 200,
            locals: {id: id, graph: graph}
          )
        end
        router.get("/queues/:name") do
          name = route_params["name"]
          rows = store.queue_entries(
            name, limit: PER_PAGE + 1, offset: (page - 1) * PER_PAGE
          )
          entries = rows.first(PER_PAGE).map { |payload| Entry.new(payload) }
          state = {
            size: store.queue_sizes.fetch(name, 0),
            paused: store.paused_queues.include?(name)
          }
          erb(
            :queue,
            locals: {
              name: name,
              entries: entries,
              more: rows.size > PER_PAGE,
              **state
            }
          )
        end
      end

      # Quiet and Stop on the Busy page: requests the process takes at its next heartbeat. Cancel stops a running job
      # on whichever process runs it, at once (Jiggler::Cancellation).
      def self.process_actions(router)
        %w[quiet stop].each do |signal|
          router.post("/busy/:process/#{signal}") do
            store.signal_process(route_params["process"], signal)
            redirect("/busy")
          end
        end
        router.post("/busy/jobs/:jid/cancel") do
          Cancellation.cancel(
            store, route_params["jid"], by: Routes::CANCELLED_BY
          )
          redirect("/busy")
        end
      end

      def self.queue_actions(router)
        router.post("/queues/:name/pause") do
          store.pause_queue(route_params["name"])
          redirect(*Routes.back_to_queue(self))
        end
        router.post("/queues/:name/resume") do
          store.resume_queue(route_params["name"])
          redirect(*Routes.back_to_queue(self))
        end
        router.post("/queues/:name/clear") do
          store.clear_queue(route_params["name"])
          redirect("/queues")
        end
        router.post("/queues/:name/delete") do
          payload = Routes.queue_entry(
            store, route_params["name"], param("digest"), page
          )
          if payload
            UniqueJob.released(store, [payload]) do
              store.delete_queue_entry(route_params["name"], payload)
            end
          end
          redirect("/queues", route_params["name"], page: page)
        end
      end

      def self.set_pages(router)
        router.get("/:set") do
          set = SETS[route_params["set"]] || not_found
          filter = param("filter").strip
          unless filter.empty?
            search = Filter.new(store, set, filter, reverse: set == :dead)
          end
          entries = Routes.set_page(store, set, search, page)
          erb(
            :set,
            locals: {
              set: set,
              filter: filter,
              search: search,
              entries: entries.first(PER_PAGE),
              more: entries.size > PER_PAGE
            }
          )
        end
        router.get("/:set/:key") do
          set = SETS[route_params["set"]] || not_found
          score, jid = Entry.parse_key(route_params["key"]) || not_found
          entry = Entry.new(
            store.set_entry(set, score, jid) || not_found, score
          )
          erb(
            :job,
            locals: {
              set: set,
              entry: entry,
              history: Routes.history(store, jid)
            }
          )
        end
      end

      def self.set_actions(router)
        router.post("/:set") do
          set = SETS[route_params["set"]] || not_found
          entries = Array(url_params["keys"]).filter_map do |key|
            Entry.parse_key(key) if key.is_a?(String)
          end
          case param("do")
          when "run" then SetActions.run(store, set, entries)
          when "delete" then SetActions.delete(store, set, entries)
          when "kill"
            (set == :dead) ? halt(400) : SetActions.kill(store, set, entries)
          when "cancel"
            (set == :dead) ? halt(400) : Routes.cancel(store, entries)
          else halt(400, "unknown action")
          end
          redirect("/#{route_params["set"]}")
        end
        router.post("/:set/all") do
          set = SETS[route_params["set"]] || not_found
          case param("do")
          when "run", "delete"
            SetActions.sweep(store, set, param("do").to_sym)
          else halt(400, "unknown action")
          end
          redirect("/#{route_params["set"]}")
        end
      end
      private_class_method :pages, :queue_actions, :process_actions,
        :set_pages, :set_actions

      # Cancels the jobs of set entries ([score, jid] pairs): each ends in the dead set, marked cancelled.
      def self.cancel(store, entries)
        entries.each do |_score, jid|
          Cancellation.cancel(store, jid, by: CANCELLED_BY)
        end
      end

      # Where a queue action returns: the queue's page when it was sent from there, else the list of queues.
      # @returns [Array(String)] the path and its segments, for `redirect`.
      def self.back_to_queue(action)
        (action.param("from") == "queue") ?
          ["/queues", action.route_params["name"]] :
          ["/queues"]
      end

      # A page of a set's entries, filtered by `search` when there is one,
      # with one more entry to tell if there are more.
      # @returns [Array(Entry)]
      def self.set_page(store, set, search, page)
        offset = (page - 1) * PER_PAGE
        return search.entries(offset: offset, limit: PER_PAGE + 1) if search
        store.set_entries(
          set, limit: PER_PAGE + 1, offset: offset, reverse: set == :dead
        ).map { |payload, score| Entry.new(payload, score) }
      end

      # The payload with this digest on a page of a queue, or on the page before it: jobs run from the head, so an entry
      # only moves towards the front. nil when it is gone.
      def self.queue_entry(store, name, digest, page)
        offset = [(page - 2) * PER_PAGE, 0].max
        store.queue_entries(name, limit: 2 * PER_PAGE, offset: offset)
          .find { |payload| Entry.digest(payload) == digest }
      end

      # A job's recorded events, on a store that keeps them (SQLite); nil elsewhere.
      def self.history(store, jid)
        store.history(jid) if Store::Contract.supports?(store, :history)
      rescue Store::ConnectionError
        # an unreadable row elsewhere in the file must not take the job's page down
        nil
      end
    end
  end
end
