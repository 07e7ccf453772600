# frozen_string_literal: true

require "json"
require_relative "router"

module Jiggler
  class Web
    # The recurring tasks page: each task the servers run, its schedule, last and next run, and actions to run it now
    # or to disable and enable it for every server. Tasks are read from the store, where servers record them at boot,
    # so the dashboard needs neither the app's job classes nor its recurring.yml.
    module RecurringRoutes
      # A task as the page shows it.
      Row = Struct.new(:name, :task, :options, :last_run, :enabled, :error, keyword_init: true) do
        # The next tick, or nil when the schedule cannot be read here.
        def next_run = task&.tick_after(Time.now.to_f)
      end

      # @returns [Router]
      def self.draw(router)
        router.get("/recurring") { erb(:recurring, locals: {rows: RecurringRoutes.rows(store)}) }
        router.post("/recurring/:name/run") do
          row = RecurringRoutes.find(store, route_params["name"]) || not_found
          halt(400, "this task's settings cannot be read: #{row.error}") unless row.task
          row.task.enqueue(store, row.options, nil, middleware: Jiggler.config.client_middleware)
          redirect("/recurring")
        end
        router.post("/recurring/:name/enable") { RecurringRoutes.enable(self, true) }
        router.post("/recurring/:name/disable") { RecurringRoutes.enable(self, false) }
        router
      end

      # The tasks recorded in the store. @returns [Array(Row)]
      def self.rows(store)
        require_relative "../recurring_task" # fugit, loaded only by a dashboard that shows this page
        store.recurring_tasks.map { |name, json, last_run, enabled| row(name, json, last_run, enabled) }
      end

      # @returns [Row | Nil]
      def self.find(store, name) = rows(store).find { |row| row.name == name }

      def self.row(name, json, last_run, enabled)
        task, options = RecurringTask.from_h(name, JSON.parse(json))
        Row.new(name: name, task: task, options: options, last_run: last_run, enabled: enabled)
      rescue JSON::ParserError, Config::InvalidError, TypeError, NoMethodError => error
        Row.new(name: name, last_run: last_run, enabled: enabled, error: error.message.lines.first.to_s.strip)
      end

      def self.enable(action, enabled)
        find(action.store, action.route_params["name"]) || action.not_found
        action.store.enable_recurring(action.route_params["name"], enabled)
        action.redirect("/recurring")
      end
      private_class_method :row
    end
  end
end
