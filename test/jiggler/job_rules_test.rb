# frozen_string_literal: true

require "test_helper"

describe Jiggler::JobRules do
  let(:now) { 1_700_000_000.0 }

  def job(**fields)
    JSON.generate(
      {"jid" => "abc", "name" => "RecordJob", "args" => [1], "queue" => "mail"}
        .merge(fields.transform_keys(&:to_s))
    )
  end

  def held(*payloads)
    payloads.each_with_index.map do |payload, index|
      Jiggler::Store::Fetched.new(index, "mail", payload)
    end
  end

  def parsed(fetched) = JSON.parse(fetched.payload)

  describe ".due" do
    it "sends scheduled jobs to their queue, retries and dead jobs " \
      "to retry_queue, and refreshes enqueued_at" do
      payload = job(retry_queue: "slow", enqueued_at: 1.0)
      destinations = %i[scheduled retry dead].map do |from|
        Jiggler::JobRules.due(from, payload, now)
      end
      assert_equal %w[mail slow slow], destinations.map(&:queue)
      assert_equal [now] * 3,
        destinations.map { |destination|
          JSON.parse(destination.payload)["enqueued_at"]
        }
    end

    it "puts a scheduled batch item in its batch, " \
      "and a retried one in its queue" do
      payload = job(batch_item: true)
      assert_equal ["mail", "RecordJob"],
        Jiggler::JobRules.due(:scheduled, payload, now).then { |destination|
          [destination.queue, destination.batch]
        }
      assert_nil Jiggler::JobRules.due(:retry, payload, now).batch
    end

    it "sends an unreadable payload to the default queue as it is" do
      destination = Jiggler::JobRules.due(:scheduled, "{oops", now)
      assert_equal ["default", "{oops", nil], destination.to_a
    end
  end

  it "stamps a killed job with died_at, and keeps an unreadable one as it is" do
    assert_equal now, JSON.parse(Jiggler::JobRules.killed(job, now))["died_at"]
    assert_equal "[1]", Jiggler::JobRules.killed("[1]", now)
  end

  describe ".death" do
    it "pins the crash on the one job a process held" do
      death = Jiggler::JobRules.death(held(job(crashes: 1)), 4)
      assert_equal [[2, nil]],
        death.requeued.map { |fetched|
          parsed(fetched).values_at("crashes", "suspect")
        }
      assert_equal [0, "mail"], death.requeued.first.to_a.first(2)
    end

    it "puts the jobs a process held together back side by side, " \
      "without a crash, the death noted on each" do
      death = Jiggler::JobRules.death(held(job, job(deaths_beside: 1)), 5)
      assert_equal [[nil, nil, 1], [nil, true, 2]],
        death.requeued.map { |fetched|
          parsed(fetched).values_at("crashes", "suspect", "deaths_beside")
        },
        "a first death beside others is most likely the host's; " \
        "a second makes a suspect"
      assert_empty death.poisoned
    end

    it "makes a suspect of a job whose next death would poison it, " \
      "so that death is its own" do
      death = Jiggler::JobRules.death(held(job, job(crashes: 1)), 3)
      assert_equal [[nil, nil, 1], [1, true, 1]],
        death.requeued.map { |fetched|
          parsed(fetched).values_at("crashes", "suspect", "deaths_beside")
        }
      death = Jiggler::JobRules.death(held(job(crashes: 1)), 3)
      assert_equal [[2, true]],
        death.requeued.map { |fetched|
          parsed(fetched).values_at("crashes", "suspect")
        }
      death = Jiggler::JobRules.death(held(job, job), 1)
      assert_equal [true, true],
        death.requeued.map { |fetched| parsed(fetched)["suspect"] },
        "max_crashes 1: at once"
    end

    it "pins a suspect's deaths beside other jobs on it when it dies alone" do
      suspect = job(suspect: true, deaths_beside: 2)
      death = Jiggler::JobRules.death(held(suspect), 4)
      assert_equal [[3, true, nil]],
        death.requeued.map { |fetched|
          parsed(fetched).values_at("crashes", "suspect", "deaths_beside")
        }
    end

    it "sends a killer to the dead set after exactly max_crashes deliveries, " \
      "whatever it died beside" do
      (1..5).each do |max_crashes|
        [[3] * 5, [1] * 5, [3, 1, 2, 1, 1]].each do |sizes|
          payload = job(args: ["killer"])
          deliveries = sizes.each_with_index do |size, index|
            # Whatever else was held, the killer runs beside it only while it is not a suspect.
            size = 1 if JSON.parse(payload)["suspect"]
            death = Jiggler::JobRules.death(
              held(payload, *Array.new(size - 1) { job }), max_crashes
            )
            break index + 1 if death.poisoned.any? { |_, poisoned|
              poisoned["args"] == ["killer"]
            }
            payload = death.requeued.first.payload
          end
          # one death beside others is never pinned at once: max_crashes 1 takes 2
          expected = [max_crashes, 2].max
          expected = max_crashes if sizes.first == 1
          assert_equal expected, deliveries,
            "max_crashes #{max_crashes}, held beside #{sizes.inspect}"
        end
      end
    end

    it "poisons a job at max_crashes, and sets unreadable ones apart" do
      death = Jiggler::JobRules.death(held(job(crashes: 2)), 3)
      assert_equal [3], death.poisoned.map { |_, poisoned| poisoned["crashes"] }
      death = Jiggler::JobRules.death(held("{oops", job(crashes: "x")), 3)
      assert_equal [[0, Jiggler::Payload::MalformedError]],
        death.unreadable.map { |fetched, error| [fetched.handle, error.class] }
      assert_equal [["x", nil]],
        death.requeued.map { |fetched|
          parsed(fetched).values_at("crashes", "suspect")
        }
    end
  end
end
