"""factory-boy factories for the domain models."""

import factory
from django.contrib.auth import get_user_model

from audits.accounts import account_for_user
from audits.models import Audit, Project


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    owner = factory.SubFactory(UserFactory)
    account = factory.LazyAttribute(lambda p: account_for_user(p.owner))
    name = factory.Sequence(lambda n: f"project-{n}")
    base_url = "http://127.0.0.1:1/"
    max_pages = 1000


class AuditFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Audit

    project = factory.SubFactory(ProjectFactory)
    start_url = factory.LazyAttribute(lambda a: a.project.base_url)
    site_url = factory.LazyAttribute(lambda a: a.start_url)
    config = factory.LazyAttribute(lambda a: {"max_pages": a.project.max_pages})
