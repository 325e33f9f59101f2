# frozen_string_literal: true

# The fair-share client law as a gem: the core needs only Ruby's standard library; the Faraday
# middleware (lib/fair_share/faraday.rb) is loaded only by those who require it, with their own
# Faraday. Built with `gem build fair_share.gemspec` from this folder.
require_relative 'lib/fair_share'

Gem::Specification.new do |spec|
  spec.name = 'fair_share'
  spec.version = FairShare::FOLLOWS # the version of crates/fair-share this port follows
  spec.summary = 'Many processes and threads sharing one API token behind a rate limit, without 429s'
  spec.description = 'The fair-share client law: before each request it says how long this thread waits, ' \
                     'from the rate-limit headers of the answers so far, so that every thread of every ' \
                     'process gets an equal share of the quota. Standard library only; an optional ' \
                     'Faraday middleware.'
  spec.authors = ['throttle-sim contributors']
  spec.licenses = %w[MIT Apache-2.0]
  spec.required_ruby_version = '>= 3.0'
  spec.files = %w[lib/fair_share.rb lib/fair_share/slots.rb lib/fair_share/faraday.rb README.md]
  spec.require_paths = ['lib']
  spec.add_development_dependency 'faraday', '>= 1.0', '< 3'
  spec.add_development_dependency 'minitest', '~> 5.14'
end
