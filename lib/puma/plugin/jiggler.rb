# frozen_string_literal: true

require "puma/plugin"
require "jiggler/sidecar"

# `plugin :jiggler` in config/puma.rb: one jiggler server beside Puma, for a container or a dyno that runs both.
# When Puma has booted, it starts `jiggler -r .` (the app in Puma's directory, with config/jiggler.yml) as a child
# process (Jiggler::Sidecar); when Puma stops or restarts, it sends the child TERM and waits up to jiggler's
# `timeout` and its grace before killing it. A child that dies is started again; one that keeps dying within 30 s of
# starting (5 times in a row) stops Puma, so that the container is restarted whole.
Puma::Plugin.create do
  # Called by Puma as it starts.
  # @parameter launcher [Puma::Launcher]
  def start(launcher)
    @launcher = launcher
    hook(:after_booted, :on_booted) { start_server }
    hook(:after_stopped, :on_stopped) { stop_server }
    hook(:before_restart, :on_restart) { stop_server }
  end

  private

  # Puma 7 names the hooks after_booted, after_stopped and before_restart; Puma 6, on_booted, on_stopped, on_restart.
  def hook(name, former_name, &block)
    events = @launcher.events
    events.respond_to?(name) ?
      events.public_send(name, &block) :
      events.public_send(former_name, &block)
  end

  def start_server
    return if @sidecar
    @sidecar = Jiggler::Sidecar.new(
      command: Jiggler::Sidecar.command(Dir.pwd),
      log: method(:log),
      on_give_up: -> { @launcher.stop }
    ).start
  end

  def stop_server
    sidecar = @sidecar
    @sidecar = nil
    sidecar&.stop(
      Jiggler::Sidecar.stop_timeout(@launcher.options[:environment])
    )
  end

  def log(message)
    writer = @launcher.respond_to?(:log_writer) ?
      @launcher.log_writer :
      @launcher.events
    writer.log("* jiggler: #{message}")
  end
end
