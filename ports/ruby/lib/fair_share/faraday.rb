# frozen_string_literal: true

# A Faraday middleware that sends every request of a connection when the fair-share law says so
# and tells the law every answer (ports/ruby/README.md):
#
#   law = FairShare.new(8)                     # one per process: up to 8 requests at once
#   conn = Faraday.new(url) { |f| f.request :fair_share, law: law }
#
# Faraday is not a dependency of the gem: require this file only where Faraday is installed
# (1.x or 2.x).
require 'faraday'
require_relative '../fair_share'
require_relative 'slots'

class FairShare
  module Faraday
    # Each request takes one of the law's thread numbers (waiting for one when as many requests
    # as the law has threads are in flight), sleeps until the law lets that thread send, and
    # after it the law reads the answer: its status and headers, or no status when no answer
    # came, with its latency on the monotonic clock. An error is raised again once the law has
    # seen it.
    class Middleware < ::Faraday::Middleware
      MONOTONIC = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }

      # `concurrency`, when given, must be the law's threads: it is there to say so where the
      # connection is made, since a slot is one of the law's threads.
      def initialize(app, law:, concurrency: nil)
        super(app)
        if concurrency && concurrency != law.threads
          raise ArgumentError, "fair_share: concurrency #{concurrency} is not the law's #{law.threads} threads; " \
                               'make the FairShare with as many threads as requests may run at once'
        end
        @law = law
        @slots = Slots.of(law)
      end

      def call(env)
        # In parallel mode the answer comes after `call` returns, when the slot is no longer held.
        raise ArgumentError, 'fair_share: Faraday parallel requests are not supported' if env.parallel?

        @slots.hold do |slot|
          while (wait = @law.wait(slot, MONOTONIC.call)).positive?
            sleep(wait)
          end
          sent = MONOTONIC.call
          begin
            response = @app.call(env)
          rescue StandardError => e
            answered = MONOTONIC.call
            status, headers = answer_of(e)
            @law.observe(slot, answered, status, headers, answered - sent)
            raise
          end
          answered = MONOTONIC.call
          @law.observe(slot, answered, response.status, response.headers, answered - sent)
          response
        end
      end

      private

      # The answer an error carries, when a middleware inside this one raised on a status (such
      # as Faraday's raise_error on a 429); else no answer came.
      def answer_of(error)
        got = error.respond_to?(:response) ? error.response : nil
        return [nil, []] unless got.is_a?(Hash) && got[:status]

        [got[:status], got[:headers] || []]
      end
    end
  end
end

Faraday::Request.register_middleware(fair_share: FairShare::Faraday::Middleware)
