# frozen_string_literal: true

require "rack"
require_relative "../jiggler"
require_relative "web/action"
require_relative "web/routes"
require_relative "web/headers"

module Jiggler
  # The dashboard: a Rack app to mount anywhere (`mount Jiggler::Web.new => "/jiggler"` in Rails routes, `map` in a
  # config.ru) or to run alone with `jiggler web`. It reads and changes jobs only through the store's read and admin
  # methods, so it works the same on Redis and SQLite.
  #
  # Safe by construction: views escape everything they print; every state change is a POST that must carry the CSRF
  # token of a form the app rendered (403 otherwise) and must not come from another site (`Sec-Fetch-Site`); every
  # response forbids sniffing, framing and caching, and pages run only the app's own script (a CSP with a nonce).
  # The app has no login of its own: put authentication in front of it as Rack middleware (see docs/dashboard.md).
  class Web
    # Where the store is found in the Rack environment.
    STORE = "jiggler.store"
    CLIENT_MIDDLEWARE = "jiggler.client_middleware"
    UNSAFE_METHODS = %w[POST PUT PATCH DELETE].freeze
    ROUTER = Routes.draw
    # What rack raises for a request it will not parse: a form too large, too deep or with too many fields, or
    # malformed (rack 3.1 and later tag them all with Rack::BadRequest).
    REFUSED_FORMS = [
      (::Rack::BadRequest if defined?(::Rack::BadRequest)),
      ::Rack::QueryParser::ParamsTooDeepError,
      ::Rack::QueryParser::ParameterTypeError,
      ::Rack::QueryParser::InvalidParameterError
    ].compact.freeze
    private_constant :ROUTER, :UNSAFE_METHODS, :REFUSED_FORMS

    # @parameter store [Store::Redis | Store::SQLite | Nil] the store to show; nil means `Jiggler.store`, looked up on
    #   each request so that configuring jiggler after the app was built still counts.
    # @parameter client_middleware [Middleware::Chain | Nil] what a job enqueued from the dashboard passes through;
    #   nil means `Jiggler.config`'s, looked up on each request like the store.
    def initialize(store: nil, client_middleware: nil)
      @store = store
      @client_middleware = client_middleware
    end

    # Answers one request.
    # @parameter env [Hash] the Rack environment.
    # @returns [Array] status, headers and body.
    def call(env)
      env[STORE] = @store || Jiggler.store
      env[CLIENT_MIDDLEWARE] = @client_middleware || Jiggler.config.client_middleware
      route, params = ROUTER.match(
        env[::Rack::REQUEST_METHOD],
        env[::Rack::PATH_INFO].to_s.then { |path| path.empty? ? "/" : path }
      )
      action = Action.new(env, params || {})
      response = catch(:halt) { answer(route, action) }
      Headers.finish(response, action)
    rescue Store::ConnectionError => error
      Jiggler.logger.error("jiggler web: #{error.message}")
      [
        503,
        {
          "content-type" => "text/plain; charset=utf-8",
          "cache-control" => "no-store"
        },
        ["The job store cannot be reached."]
      ]
    end

    private

    # The route's response; 413 for a form over rack's size limit, 400 for one rack refuses otherwise.
    def answer(route, action)
      route ? run(route, action) : refuse(action)
    rescue *REFUSED_FORMS => error
      too_large = error.message.start_with?("total query size")
      action.halt(
        too_large ? 413 : 400,
        "#{too_large ? "Payload Too Large" : "Bad Request"}: #{error.message}"
      )
    end

    def run(route, action)
      if UNSAFE_METHODS.include?(action.request.request_method)
        check_origin!(action)
      end
      action.instance_exec(&route.block)
    end

    # A request no route takes: 405 when the path exists for another method, else 404.
    def refuse(action)
      allowed = ROUTER.allowed(action.env[::Rack::PATH_INFO].to_s)
      return action.not_found if allowed.empty?
      [
        405,
        {
          "content-type" => "text/plain; charset=utf-8",
          "allow" => allowed.join(", ")
        },
        ["Method Not Allowed"]
      ]
    end

    # Refuses a state change sent by another site, or without this app's CSRF token.
    def check_origin!(action)
      site = action.env["HTTP_SEC_FETCH_SITE"]
      if site && site != "same-origin"
        action.halt(
          403, "Forbidden: cross-site request (Sec-Fetch-Site: #{site})"
        )
      end
      unless action.csrf.valid?
        action.halt(
          403,
          "Forbidden: missing or invalid CSRF token; " \
          "reload the page and try again"
        )
      end
    end
  end
end
