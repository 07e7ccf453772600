# frozen_string_literal: true

require "json"
require_relative "router"

module Jiggler
  class Web
    # The recurring tasks page: each task the servers run, its schedule, last and next run, and actions to run it now
    # or to disable and enable it for every server. Tasks are read from the store, where servers record them at boot,
    # so the dashboard needs neither the app's job classes nor its recurring.yml. The page shows PER_PAGE tasks at a
    # time, by name: only those are read and have their next run worked out, so thousands of tasks render at once.
    module RecurringRoutes
      PER_PAGE = 50

      # A task as the page shows it.
      Row = Struct.new(
        :name, :task, :settings, :last_run, :enabled, :error, keyword_init: true
      ) do
        # The next tick, or nil when the schedule cannot be read here.
        def next_run = task&.tick_after(Time.now.to_f)
      end

      # @returns [Router]
      def self.draw(router)
        router.get("/recurring") { RecurringRoutes.page(self) }
        router.post("/recurring/:name/run") do
          row = RecurringRoutes.find(store, route_params["name"]) || not_found
          unless row.task
            halt(400, "this task's settings cannot be read: #{row.error}")
          end
          pushed = row.task.enqueue(
            store,
            row.settings,
            nil,
            middleware: env[CLIENT_MIDDLEWARE]
          )
          if pushed.nil?
            halt(
              409,
              "not enqueued: this task's job is unique and one is still " \
              "queued or running (lock #{row.settings.dig("unique", "lock")})"
            )
          end
          redirect("/recurring")
        end
        router.post("/recurring/:name/enable") do
          RecurringRoutes.enable(self, true)
        end
        router.post("/recurring/:name/disable") do
          RecurringRoutes.enable(self, false)
        end
        router
      end

      # The page of tasks asked for with `?page=`.
      # @parameter action [Action]
      def self.page(action)
        recorded = action.store.recurring_tasks
        shown = recorded.drop((action.page - 1) * PER_PAGE).first(PER_PAGE)
        more = recorded.size > action.page * PER_PAGE
        action.erb(
          :recurring,
          locals: {rows: rows(shown), total: recorded.size, more: more}
        )
      end

      # The tasks as the page shows them.
      # @parameter recorded [Array(Array)] what `store.recurring_tasks` returns, or part of it.
      # @returns [Array(Row)]
      def self.rows(recorded)
        # fugit, loaded only by a dashboard that shows this page
        require_relative "../recurring_task"
        recorded.map do |name, json, last_run, enabled|
          row(name, json, last_run, enabled)
        end
      end

      # The task recorded under a name, read alone. @returns [Row | Nil]
      def self.find(store, name)
        rows(
          store.recurring_tasks.select { |recorded| recorded.first == name }
        ).first
      end

      def self.row(name, json, last_run, enabled)
        task, settings = RecurringTask.from_h(name, JSON.parse(json))
        Row.new(
          name: name,
          task: task,
          settings: settings,
          last_run: last_run,
          enabled: enabled
        )
      rescue JSON::ParserError, Config::InvalidError, TypeError,
        NoMethodError => error
        Row.new(
          name: name,
          last_run: last_run,
          enabled: enabled,
          error: error.message.lines.first.to_s.strip
        )
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
